"""Cost of the Agents lists in process: first page against a deep cursor.

    DATABASE_URL=postgres://.../<your database> REDIS_URL=redis://127.0.0.1:6379/<n> \
        uv run python benchmarks/agent_revisions.py [--revisions 100000] [--agents 2000]

Fills (once) one workspace with `--agents` Agents and one of them with `--revisions` revisions
(inserted with generate_series), then times `GET /v1/agents` and
`GET /v1/agents/{id}/revisions` through Django's test client: the median over 5 rounds of 200
requests, for the first page and for a page reached by walking the cursors to the far end. A
keyset page should cost the same at any depth. PostgreSQL only; the database is migrated first.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("API_RATE_LIMIT", "100000000/minute")
os.environ.setdefault("LOG_LEVEL", "WARNING")

WORKSPACE = "ws_bench_agents"
AGENT = "agt_bench_revisions"


def fill(*, agents: int, revisions: int) -> None:
    from django.db import connection, transaction

    from apps.workspaces.models import Agent, Workspace
    from apps.workspaces.services import agent_create

    if Agent.objects.filter(pk=AGENT, revision__gte=revisions).exists():
        return
    with transaction.atomic():
        Workspace.objects.filter(pk=WORKSPACE).delete()
        workspace = Workspace.objects.create(pk=WORKSPACE, name="Bench")
        agent = agent_create(workspace=workspace, name="Bench", instructions="x" * 4000)
        Agent.objects.filter(pk=agent.pk).update(id=AGENT)
        with connection.cursor() as cursor:
            cursor.execute(
                """
                UPDATE workspaces_agentrevision SET agent_id = %(agent)s
                 WHERE agent_id = %(old)s;
                INSERT INTO workspaces_agentrevision
                       (id, agent_id, number, kind, configuration, changed_fields,
                        actor_type, actor_id, actor_name, created_at)
                SELECT 'agtrev_bench' || lpad(n::text, 9, '0'), %(agent)s, n, 'updated',
                       jsonb_build_object('name', 'Bench', 'description', 'v' || n,
                           'instructions', repeat('x', 4000), 'model_id', null,
                           'effort', null, 'knowledge_search_enabled', true,
                           'allowed_origins', '[]'::jsonb),
                       '["description"]'::jsonb, 'system', null, 'System',
                       now() - make_interval(secs => %(revisions)s - n)
                  FROM generate_series(2, %(revisions)s) AS n;
                UPDATE workspaces_agent SET revision = %(revisions)s WHERE id = %(agent)s;
                INSERT INTO workspaces_agent
                       (id, workspace_id, name, description, instructions, model_id, effort,
                        knowledge_search_enabled, allowed_origins, revision, status,
                        created_at, updated_at, archived_at)
                SELECT 'agt_bench' || lpad(n::text, 9, '0'), %(workspace)s, 'Agent ' || n,
                       '', repeat('y', 2000), 'gpt-4.1-mini', null, true, '[]'::jsonb, 1,
                       CASE WHEN n %% 5 = 0 THEN 'archived' ELSE 'active' END,
                       now() - make_interval(secs => n), now(), null
                  FROM generate_series(1, %(agents)s) AS n;
                ANALYZE workspaces_agent;
                ANALYZE workspaces_agentrevision;
                """,
                {"agent": AGENT, "old": agent.pk, "revisions": revisions, "agents": agents,
                 "workspace": WORKSPACE},
            )  # fmt: skip


def deepest_cursor(client, headers, path: str) -> tuple[str, int]:
    """Walk the list 100 at a time; the cursor of the last full page and the rows before it."""
    cursor, seen, after = None, 0, ""
    joiner = "&" if "?" in path else "?"
    while True:
        body = client.get(f"{path}{joiner}limit=100{after}", headers=headers).json()
        if not body["has_more"]:
            return cursor or "", seen
        seen += len(body["data"])
        cursor = body["next_cursor"]
        after = f"&after={cursor}"


def timed(client, headers, path: str, *, requests: int, repeats: int) -> float:
    assert client.get(path, headers=headers).status_code == 200
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(requests):
            client.get(path, headers=headers)
        samples.append((time.perf_counter() - started) / requests * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=100_000)
    parser.add_argument("--agents", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from apps.workspaces.models import Agent
    from apps.workspaces.services import api_key_create

    if connection.vendor != "postgresql":
        sys.exit("PostgreSQL only: set DATABASE_URL.")
    call_command("migrate", verbosity=0)
    fill(agents=args.agents, revisions=args.revisions)
    _, raw = api_key_create(agent=Agent.objects.get(pk=AGENT), name="bench", scopes=["agents:read"])
    client = Client()
    headers = {"Authorization": f"Bearer {raw}"}
    print(
        f"{args.agents + 1} Agents, {args.revisions} revisions of one; "
        f"median ms per request ({args.repeats} x {args.requests})"
    )
    baseline = timed(
        client, headers, "/v1/connection", requests=args.requests, repeats=args.repeats
    )
    print(f"  {'GET /v1/connection (baseline)':34} {baseline:6.2f}")
    for label, path in (
        ("GET /v1/agents", "/v1/agents"),
        ("GET /v1/agents?status=archived", "/v1/agents?status=archived"),
        ("GET /v1/agents/{id}/revisions", f"/v1/agents/{AGENT}/revisions"),
    ):
        cursor, depth = deepest_cursor(client, headers, path)
        joiner = "&" if "?" in path else "?"
        first = timed(client, headers, path, requests=args.requests, repeats=args.repeats)
        if not cursor:  # one page holds the whole list (a small --agents or --revisions)
            print(f"  {label:34} first page {first:6.2f}   (no second page)")
            continue
        deep = timed(
            client,
            headers,
            f"{path}{joiner}after={cursor}",
            requests=args.requests,
            repeats=args.repeats,
        )
        print(f"  {label:34} first page {first:6.2f}   after row {depth:>7} {deep:6.2f}")


if __name__ == "__main__":
    main()
