"""Unanswered questions at scale: the sweep over N retrieval steps, then the server time of
GET /v1/knowledge/gaps and the console's Unanswered questions, Knowledge list and document
pages over what it built.

    uv run python benchmarks/knowledge_gaps.py [--steps 100000] [--distinct 2000]
        [--requests 30] [--reuse] [--more-groups 5000]

Uses a database of its own (GAPS_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/agent_console_gaps_bench; migrated on first use). One Agent
gets 60 ready documents and `--steps` retrieval steps (one run each, five runs per
conversation, spread over 30 days): 40 % found nothing or only weak passages, asking one of
`--distinct` question texts; the rest returned one to three documents scoring 0.8. The sweep
(the beat task's own function) reads and groups them all with the packaged model, timed; then
each request is timed through Django's test client (every middleware, the API key or the
signed-in session, rendering), median and 95th percentile. `--reuse` keeps the data of an
earlier run of the same size and measures the requests only. The generated questions are
variations on 30 subjects, which the sweep rightly puts in about 30 groups; `--more-groups N`
adds N groups of four askings each (a quarter resolved) so the lists page through many.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.databases import benchmark_environment  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/agent_console_gaps_bench"
SUBJECTS = [
    "subscription", "refund", "password", "invoice", "delivery to Canada", "shipping address",
    "API rate limit", "two-factor login", "opening hours", "pet policy", "student discount",
    "team invitations", "account deletion", "warranty", "gift cards", "parking", "breakfast",
    "mobile app", "Slack integration", "data export", "dark mode", "annual plan", "VAT number",
    "order tracking", "return label", "size guide", "loyalty points", "late check-out",
    "airport shuttle", "spa booking",
]  # fmt: skip
FORMS = [
    "How do I change my {s}?", "Question about the {s}", "Where can I read about the {s}?",
    "Is there anything on {s} for business customers?", "What is your policy on {s}?",
    "{s} not working", "Can you explain the {s} in detail?", "I need help with {s} today",
]  # fmt: skip


def questions(count: int) -> list[str]:
    rng = random.Random(1)
    texts = set()
    while len(texts) < count:
        subject = rng.choice(SUBJECTS)
        text = rng.choice(FORMS).format(s=subject)
        texts.add(f"{text} (case {rng.randrange(count)})" if text in texts else text)
    return sorted(texts)


def build(agent, args) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from apps.activity.models import Conversation, Run, RunStep
    from apps.knowledge.models import KnowledgeDocument

    rng = random.Random(7)
    now = timezone.now()
    documents = [
        KnowledgeDocument(agent=agent, name=f"Guide {n}", source_type="file", status="ready",
                          file_name=f"guide-{n}.md", kind="md", created_at=now, updated_at=now)
        for n in range(60)
    ]  # fmt: skip
    KnowledgeDocument.objects.bulk_create(documents)
    asked = questions(args.distinct)
    settled = now - timedelta(hours=2)
    batch = 5000
    for start in range(0, args.steps, batch):
        conversations, runs, steps = [], [], []
        for n in range(start, min(start + batch, args.steps)):
            at = now - timedelta(seconds=rng.randrange(30 * 86400 - 7200) + 7200)
            if n % 5 == 0:
                conversations.append(Conversation(agent=agent, id=f"conv_{n // 5}",
                                                  created_at=at, updated_at=at))  # fmt: skip
            runs.append(Run(agent=agent, id=f"run_{n}", conversation_id=f"conv_{n // 5}",
                            request_id=f"r{n}", sdk_version="bench", created_at=at,
                            updated_at=at))  # fmt: skip
            if rng.random() < 0.4:
                query = rng.choice(asked)
                found = (
                    []
                    if rng.random() < 0.5
                    else [{"document_id": rng.choice(documents).pk, "title": "Guide",
                           "passage": "Something near it.", "score": round(rng.uniform(0.05, 0.45), 3)}]
                )  # fmt: skip
            else:
                query = f"answered question {rng.randrange(5000)}"
                found = [{"document_id": document.pk, "title": document.name,
                          "passage": "The answer.", "score": 0.8}
                         for document in rng.sample(documents, rng.randint(1, 3))]  # fmt: skip
            steps.append(RunStep(agent=agent, id=f"step_{n}", run_id=f"run_{n}", kind="retrieval",
                                 name="search", query=query, documents=found, started_at=at,
                                 ended_at=at, created_at=settled, updated_at=settled))  # fmt: skip
        Conversation.objects.bulk_create(conversations)
        Run.objects.bulk_create(runs)
        RunStep.objects.bulk_create(steps)
    print(
        f"made {args.steps:,} retrieval steps, 60 documents, {args.distinct:,} distinct questions"
    )


def add_groups(agent, count: int) -> None:
    """Groups beside the sweep's (as if `count` more needs had been asked), each with four
    askings of steps the benchmark made, so the lists page through many groups."""
    from datetime import timedelta

    import numpy as np
    from django.db import connection
    from django.utils import timezone

    from apps.knowledge.gaps.models import KnowledgeGap, KnowledgeGapOccurrence

    have = KnowledgeGap.objects.filter(agent=agent, representative__startswith="extra ").count()
    if have >= count:
        return
    rng = random.Random(3)
    now = timezone.now()
    vector = np.zeros(384, dtype="<f4").tobytes()
    gaps = []
    for n in range(have, count):
        at = now - timedelta(seconds=rng.randrange(30 * 86400))
        gaps.append(KnowledgeGap(agent=agent, representative=f"extra need {n}?",
                                 question_count=4, no_answer_count=2, distinct_count=2,
                                 vector_sum=vector, first_seen_at=at - timedelta(days=1),
                                 last_seen_at=at, created_at=at, updated_at=at,
                                 status="resolved" if n % 4 == 0 else "open"))  # fmt: skip
    KnowledgeGap.objects.bulk_create(gaps, batch_size=2000)
    occurrences = [
        KnowledgeGapOccurrence(agent=agent, gap=gap, step_id=f"extra_{gap.pk}_{k}",
                               run_id=f"run_{rng.randrange(1000)}",
                               conversation_id=f"conv_{rng.randrange(200)}",
                               query=gap.representative, reason="no_answer",
                               asked_at=gap.last_seen_at - timedelta(hours=k))
        for gap in gaps
        for k in range(4)
    ]  # fmt: skip
    KnowledgeGapOccurrence.objects.bulk_create(occurrences, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"added {len(gaps):,} groups ({len(occurrences):,} askings)")


def timed(client, url: str, requests: int, **headers) -> str:
    for _ in range(3):
        response = client.get(url, headers=headers)
    if response.status_code != 200:
        raise SystemExit(f"GET {url}: {response.status_code} {response.content[:300]!r}")
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        client.get(url, headers=headers)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    p95 = timings[min(len(timings) - 1, int(len(timings) * 0.95))]
    return f"median {statistics.median(timings):6.1f} ms, p95 {p95:6.1f} ms"


def measure(args) -> None:
    import warnings

    import django

    warnings.filterwarnings("ignore", message="No directory at")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from apps.activity.models import RunStep
    from apps.knowledge.gaps.models import KnowledgeDocumentRetrieval, KnowledgeGap
    from apps.knowledge.gaps.services import gaps_sweep
    from apps.knowledge.models import KnowledgeDocument
    from apps.workspaces.console import SESSION_AGENT_KEY
    from apps.workspaces.models import Agent
    from tests.factories import agent_factory, api_key_factory, user_factory, workspace_factory

    call_command("migrate", verbosity=0)
    name = f"Gaps {args.steps}"
    agent = Agent.objects.filter(name=name).first()
    if agent is None or not args.reuse:
        if agent is not None:
            agent.workspace.delete()
        owner = get_user_model().objects.filter(email="gaps-bench@example.com").first()
        owner = owner or user_factory(email="gaps-bench@example.com")
        agent = agent_factory(workspace=workspace_factory(name=name, owner=owner), name=name)
        started = time.perf_counter()
        build(agent, args)
        print(f"built in {time.perf_counter() - started:.0f} s")
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        started = time.perf_counter()
        passes = 0
        while True:
            result = gaps_sweep(budget_seconds=600)
            passes += 1
            if not result.steps and not result.grouped:
                break
        elapsed = time.perf_counter() - started
        steps = RunStep.objects.filter(agent=agent).count()
        print(
            f"sweep: {steps:,} steps read and grouped in {elapsed:.0f} s ({steps / elapsed:,.0f} "
            f"steps/s, {passes} passes): {KnowledgeGap.objects.filter(agent=agent).count():,} "
            f"groups, {KnowledgeDocumentRetrieval.objects.filter(agent=agent).count():,} "
            "document retrievals"
        )
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    if args.more_groups:
        add_groups(agent, args.more_groups)
    owner = agent.workspace.memberships.first().user
    key, raw = api_key_factory(agent=agent, scopes=["knowledge:read"], created_by=owner)
    api = Client()
    bearer = {"Authorization": f"Bearer {raw}"}
    console = Client()
    console.force_login(owner)
    session = console.session
    session[SESSION_AGENT_KEY] = agent.pk
    session.save()
    gap = KnowledgeGap.objects.filter(agent=agent).order_by("-question_count").first()
    document = KnowledgeDocument.objects.filter(agent=agent).first()
    n = args.requests
    rows = [
        ("GET /v1/knowledge (documents, for scale)", api, "/v1/knowledge", bearer),
        ("GET /v1/knowledge/gaps (20)", api, "/v1/knowledge/gaps", bearer),
        ("GET /v1/knowledge/gaps?limit=100", api, "/v1/knowledge/gaps?limit=100", bearer),
        ("GET /v1/knowledge/gaps?status=open", api, "/v1/knowledge/gaps?status=open", bearer),
        ("GET /v1/knowledge/gaps/{id}", api, f"/v1/knowledge/gaps/{gap.pk}", bearer),
        ("page: Unanswered questions (most asked)", console, "/knowledge/unanswered/", {}),
        ("page: ... sorted by last asked", console, "/knowledge/unanswered/?sort=last_seen", {}),
        ("page: a group", console, f"/knowledge/unanswered/{gap.pk}/", {}),
        ("page: Knowledge list", console, "/knowledge/", {}),
        ("page: Knowledge, never retrieved in 30 d", console, "/knowledge/?retrieved=no", {}),
        ("page: a document", console, f"/knowledge/{document.pk}/", {}),
    ]
    for label, client, url, headers in rows:
        print(f"{label:<42} {timed(client, url, n, **headers)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--distinct", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument(
        "--more-groups", type=int, default=0, help="add this many groups beside the sweep's"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure(args)
        return
    env = benchmark_environment(os.environ.get("GAPS_DATABASE_URL", DEFAULT_URL))
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, __file__, "--child", *sys.argv[1:]]
    subprocess.run(command, env=env, check=True)


if __name__ == "__main__":
    main()
