"""Unanswered questions in languages the embedding model does not read (apps.knowledge.gaps
.clustering): the English model puts every French question near every other French one, so a
question confidently in another language is grouped on its stems as well as its embedding.
Vectors stored before the stems were part of a question's vector keep working."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from apps.knowledge.gaps import clustering
from apps.knowledge.gaps.models import KnowledgeGap, KnowledgeGapQuestion
from apps.knowledge.gaps.vectors import vector_from_bytes, vector_to_bytes
from apps.retention import tasks
from apps.retention.services import retention_policy_set
from tests.knowledge.gap_helpers import ask, sweep

pytestmark = pytest.mark.django_db

PARKING = [
    "Où peut-on garer sa voiture près du bureau ?",
    "Y a-t-il des places de parking pour garer ma voiture ?",
]
HOLIDAYS = "Quels sont les jours fériés cette année ?"
PASSWORD = ["¿Cómo cambio mi contraseña olvidada?", "Olvidé mi contraseña, ¿cómo la cambio?"]
SHIPPING = "¿Cuánto cuesta el envío a Canarias?"


def _groups(agent) -> set[frozenset[str]]:
    return {
        frozenset(gap.questions.values_list("text", flat=True))
        for gap in KnowledgeGap.objects.filter(agent=agent)
    }


def test_questions_in_other_languages_are_grouped_by_need_not_by_language(make_api, agent):
    writer = make_api(["activity:write"])
    questions = [*PARKING, HOLIDAYS, *PASSWORD, SHIPPING]
    for number, question in enumerate(questions):
        ask(writer, f"run_{number}", question)

    sweep()

    # With the embedding alone, the three French questions made one group and the three
    # Spanish ones another.
    assert _groups(agent) == {
        frozenset(PARKING),
        frozenset([HOLIDAYS]),
        frozenset(PASSWORD),
        frozenset([SHIPPING]),
    }
    for text, vector in KnowledgeGapQuestion.objects.values_list("text", "vector"):
        stored = vector_from_bytes(vector)
        assert stored.shape == (clustering.DIMENSIONS,)
        assert stored[clustering.EMBEDDING_DIMENSIONS :].any(), f"{text!r} kept no stems"


def test_an_english_question_keeps_its_embedding_alone():
    embedding = clustering.unit(np.arange(clustering.EMBEDDING_DIMENSIONS, dtype=np.float32))
    assert clustering.foreign_config("How do I reset my password?") is None
    assert clustering.foreign_config("¿Cómo cambio mi contraseña olvidada?") == "spanish"
    vector = clustering.question_vector(embedding, None)
    assert not vector[clustering.EMBEDDING_DIMENSIONS :].any()
    assert clustering.threshold_for(None) == clustering.GROUP_THRESHOLD
    assert clustering.threshold_for(["contraseñ"]) == clustering.FOREIGN_THRESHOLD
    # A question of stop words only has no words to go by: it is grouped as an English one.
    assert not clustering.question_vector(embedding, [])[clustering.EMBEDDING_DIMENSIONS :].any()
    assert clustering.threshold_for([]) == clustering.GROUP_THRESHOLD


def _store_as_before(model, pk) -> None:
    """Rewrite a row's vector as it was stored before stems were part of it: the embedding's
    384 floats alone."""
    field = "vector_sum" if model is KnowledgeGap else "vector"
    row = model.objects.get(pk=pk)
    old = vector_from_bytes(getattr(row, field))[: clustering.EMBEDDING_DIMENSIONS]
    model.objects.filter(pk=pk).update(**{field: vector_to_bytes(old)})


def test_groups_stored_before_stems_take_new_questions_and_expire(make_api, agent, workspace):
    writer = make_api(["activity:write"])
    long_ago = (timezone.now() - timedelta(days=40)).isoformat()
    ask(writer, "run_0", "How do I claim my travel expenses?")
    ask(writer, "run_1", "where do I submit a travel expense claim", at=long_ago)
    sweep()
    (gap,) = KnowledgeGap.objects.filter(agent=agent)
    _store_as_before(KnowledgeGap, gap.pk)
    for question in KnowledgeGapQuestion.objects.filter(agent=agent):
        _store_as_before(KnowledgeGapQuestion, question.pk)

    ask(writer, "run_2", "Reimbursement of travel expenses: how does it work?")
    ask(writer, "run_3", "Quels sont les jours fériés cette année ?")
    sweep()

    assert _groups(agent) == {
        frozenset(
            [
                "How do I claim my travel expenses?",
                "where do I submit a travel expense claim",
                "Reimbursement of travel expenses: how does it work?",
            ]
        ),
        frozenset(["Quels sont les jours fériés cette année ?"]),
    }
    gap.refresh_from_db()
    assert vector_from_bytes(gap.vector_sum).shape == (clustering.DIMENSIONS,)

    # The expired wording goes; the group is counted again from an old vector and a new one.
    retention_policy_set(workspace=workspace, activity_days=30)
    assert tasks.apply.apply().get() == "done"
    gap.refresh_from_db()
    assert gap.distinct_count == 2 and gap.question_count == 2
    assert vector_from_bytes(gap.vector_sum).shape == (clustering.DIMENSIONS,)
