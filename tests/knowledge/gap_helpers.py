"""Retrieval steps recorded through the real paths (POST /v1/ingest, POST /v1/knowledge/search
with `run_id`, OTLP), for the unanswered-questions tests."""

from __future__ import annotations

from datetime import timedelta

import orjson
from django.utils import timezone

from apps.knowledge.gaps.services import gaps_sweep


def conversation_and_run(conversation_id: str, run_id: str) -> list[dict]:
    return [
        {"type": "conversation", "id": conversation_id, "created_at": "2026-01-05T12:00:00Z"},
        {"type": "run", "id": run_id, "conversation_id": conversation_id, "request_id": run_id,
         "sdk_version": "5.0.0", "created_at": "2026-01-05T12:00:01Z"},
    ]  # fmt: skip


def retrieval_step(
    step_id: str, run_id: str, query: str, documents: list[dict], *, at: str | None = None
) -> dict:
    at = at or (timezone.now() - timedelta(minutes=5)).isoformat()
    return {"type": "step", "id": step_id, "run_id": run_id, "kind": "retrieval",
            "name": "search", "query": query, "documents": documents, "started_at": at,
            "ended_at": at}  # fmt: skip


def ask(writer, run_id: str, query: str, documents: list[dict] | None = None, **extra) -> str:
    """A run of its own conversation whose retrieval step asked `query` and got `documents`."""
    step_id = f"st_{run_id}"
    records = [
        *conversation_and_run(f"conv_{run_id}", run_id),
        retrieval_step(step_id, run_id, query, documents or [], **extra),
    ]
    response = writer.post("/v1/ingest", json=records)
    assert response.status == 200, response.body
    return step_id


def otlp_retrieval(writer, *, trace: str, query: str, documents: list[dict]) -> None:
    """An OpenTelemetry agent span with a retrieval child (the run comes from the trace)."""
    start = int((timezone.now() - timedelta(minutes=5)).timestamp()) * 1_000_000_000

    def attribute(key, value):
        return {"key": key, "value": {"stringValue": value}}

    spans = [
        {"traceId": trace, "spanId": "a" * 16, "name": "invoke_agent support", "kind": 1,
         "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 3_000_000),
         "attributes": [attribute("gen_ai.operation.name", "invoke_agent")]},
        {"traceId": trace, "spanId": "b" * 16, "parentSpanId": "a" * 16, "name": "retrieve",
         "kind": 1, "startTimeUnixNano": str(start + 1_000), "endTimeUnixNano": str(start + 2_000),
         "attributes": [attribute("gen_ai.operation.name", "retrieval"),
                        attribute("gen_ai.retrieval.query.text", query),
                        attribute("gen_ai.retrieval.documents", orjson.dumps(documents).decode())]},
    ]  # fmt: skip
    body = {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}  # fmt: skip
    response = writer.post(
        "/v1/otlp/v1/traces", data=orjson.dumps(body), content_type="application/json"
    )
    assert response.status == 200, response.body


def sweep():
    """A sweep as beat runs it, once the steps have settled."""
    return gaps_sweep(now=timezone.now() + timedelta(minutes=10))


def gap_factory(agent, *, status: str = "open", question: str = "How do I cancel?", **fields):
    """A group of unanswered questions as the sweep leaves one (without running it)."""
    import numpy as np

    from apps.knowledge.gaps.models import KnowledgeGap

    now = timezone.now()
    values = {
        "agent": agent,
        "status": status,
        "representative": question,
        "question_count": 1,
        "no_answer_count": 1,
        "distinct_count": 1,
        "vector_sum": np.zeros(384, dtype="<f4").tobytes(),
        "first_seen_at": now,
        "last_seen_at": now,
        "created_at": now,
        "updated_at": now,
        "resolved_at": now if status == "resolved" else None,
        **fields,
    }
    return KnowledgeGap.objects.create(**values)
