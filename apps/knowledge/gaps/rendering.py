"""The `knowledge_gap` object of GET /v1/knowledge/gaps (plain dicts, rendered with orjson)."""

from __future__ import annotations

from apps.common.time import iso
from apps.knowledge.gaps.models import KnowledgeGap, KnowledgeGapOccurrence, KnowledgeGapQuestion


def gap_out(gap: KnowledgeGap) -> dict:
    best = None
    if gap.best_passage is not None or gap.best_score is not None:
        best = {
            "document_id": gap.best_document_id,
            "document_name": gap.best_document_title,
            "passage": gap.best_passage,
            "score": gap.best_score,
        }
    return {
        "object": "knowledge_gap",
        "id": gap.pk,
        "status": gap.status,
        "representative_question": gap.representative,
        "question_count": gap.question_count,
        "no_answer_count": gap.no_answer_count,
        "negative_feedback_count": gap.negative_feedback_count,
        "distinct_question_count": gap.distinct_count,
        "first_seen_at": iso(gap.first_seen_at),
        "last_seen_at": iso(gap.last_seen_at),
        "best_passage": best,
        "example_conversations": [
            {
                "conversation_id": example["conversation_id"],
                "run_id": example["run_id"],
                "question": example["question"],
                "asked_at": iso(example["asked_at"]),
            }
            for example in getattr(gap, "examples", [])
        ],
        "resolved_at": iso(gap.resolved_at),
        "reopened_at": iso(gap.reopened_at),
    }


def gap_detail_out(
    gap: KnowledgeGap,
    *,
    questions: list[KnowledgeGapQuestion],
    askings: list[KnowledgeGapOccurrence],
) -> dict:
    return {
        **gap_out(gap),
        "questions": [
            {
                "question": question.text,
                "count": question.count,
                "first_seen_at": iso(question.first_seen_at),
                "last_seen_at": iso(question.last_seen_at),
            }
            for question in questions
        ],
        "askings": [
            {
                "question": asking.query,
                "reason": asking.reason,
                "negative_feedback": asking.negative_feedback,
                "best_score": asking.best_score,
                "best_document_id": asking.best_document_id,
                "run_id": asking.run_id,
                "conversation_id": asking.conversation_id,
                "asked_at": iso(asking.asked_at),
            }
            for asking in askings
        ],
    }
