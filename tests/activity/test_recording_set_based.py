"""Recording is set-based: a batch costs the same number of statements whatever its number of
records (runs, steps, OTLP spans), the usage rollup takes one increment per Agent and day per
batch, and the batch's answer and rows are those of recording record by record."""

from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.activity.models import Run, RunStep
from apps.activity.recording import Unit, wanted_of
from apps.activity.records import records_parse
from apps.activity.services import activity_record
from apps.common.errors import BadRequest
from apps.usage.models import DailyUsage
from apps.webhooks.models import WebhookDelivery
from tests.activity.factories import end_user_factory, run_factory
from tests.activity.test_otlp import _body, _post, _span
from tests.webhooks.factories import webhook_factory

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)


def _runs(count: int, *, prefix: str) -> list[dict]:
    return [
        {"type": "run", "id": f"{prefix}_{index}", "conversation_id": "conv_1",
         "request_id": f"req_{index}", "sdk_version": "5.0.0", "status": "completed",
         "input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "credits_charged": 0.5,
         "created_at": "2025-01-31T12:00:01Z", "total_turn_latency_ms": 900}
        for index in range(count)
    ]  # fmt: skip


def _steps(count: int, *, run: str) -> list[dict]:
    return [
        {"type": "step", "id": f"{run}_step_{index}", "run_id": run, "kind": "model",
         "name": "chat", "model_id": "m", "input_tokens": 1, "output_tokens": 1,
         "started_at": "2025-01-31T12:00:01Z", "ended_at": "2025-01-31T12:00:02Z",
         **({"parent_id": f"{run}_step_0"} if index else {})}
        for index in range(count)
    ]  # fmt: skip


def _statements(agent, raw: list[dict]) -> int:
    records = records_parse(raw)
    with CaptureQueriesContext(connection) as captured:
        activity_record(agent=agent, records=records)
    return len(captured.captured_queries)


@pytest.fixture
def conversation(agent):
    activity_record(agent=agent, records=records_parse([{"type": "conversation", "id": "conv_1"}]))


def test_a_batch_of_runs_costs_the_same_statements_at_any_size(agent, conversation):
    webhook_factory(agent=agent, events=["run.completed"])
    ten = _statements(agent, _runs(10, prefix="a"))
    hundred = _statements(agent, _runs(100, prefix="b"))
    assert ten == hundred <= 14
    assert Run.objects.filter(agent=agent).count() == 110
    # One rollup row for the Agent-day, holding every run.
    row = DailyUsage.objects.get(agent=agent)
    assert (row.runs, row.completed_runs, row.total_tokens) == (110, 110, 1320)
    # Each run that ended has its one delivery, whatever the batch's size.
    deliveries = WebhookDelivery.objects.filter(agent_id=agent.pk, event_type="run.completed")
    assert sorted(deliveries.values_list("run_id", flat=True)) == sorted(
        [f"a_{index}" for index in range(10)] + [f"b_{index}" for index in range(100)]
    )


def test_updating_a_batch_of_runs_costs_the_same_statements_at_any_size(agent, conversation):
    activity_record(agent=agent, records=records_parse(_runs(100, prefix="a")))
    changed = [{"type": "run", "id": f"a_{index}", "error_code": "late"} for index in range(100)]
    ten = _statements(agent, changed[:10])
    hundred = _statements(agent, changed[10:])
    assert ten == hundred
    assert Run.objects.filter(agent=agent, error_code="late").count() == 100


def test_a_batch_of_steps_costs_the_same_statements_at_any_size(agent, conversation):
    activity_record(agent=agent, records=records_parse(_runs(2, prefix="r")))
    ten = _statements(agent, _steps(10, run="r_0"))
    nine_hundred = _statements(agent, _steps(900, run="r_1"))
    assert ten == nine_hundred
    run = Run.objects.get(agent=agent, id="r_1")
    assert (run.input_tokens, run.model_id) == (900, "m")
    assert RunStep.objects.filter(agent=agent, run_id="r_1", parent_id="r_1_step_0").count() == 899


def test_otlp_batches_cost_the_same_statements_at_any_number_of_traces(make_api):
    writer = make_api(scopes=["activity:write"])

    def traces(count: int, offset: int) -> dict:
        spans = []
        for index in range(offset, offset + count):
            trace = f"{index + 1:032x}"
            root = f"{index + 1:08x}00000001"
            spans.append(
                _span(
                    root,
                    trace=trace,
                    name="invoke_agent a",
                    attributes={
                        "gen_ai.operation.name": "invoke_agent",
                        "gen_ai.conversation.id": f"conv-{index}",
                    },
                )
            )
            spans += [_span(f"{index + 1:08x}{child + 2:08x}", parent=root, trace=trace,
                            name="chat", attributes={"gen_ai.operation.name": "chat",
                                                     "gen_ai.usage.input_tokens": 3})
                      for child in range(4)]  # fmt: skip
        return _body(*spans)

    def statements(count: int, offset: int) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert _post(writer, traces(count, offset)).json() == {}
        return len(captured.captured_queries)

    assert _post(writer, {"resourceSpans": []}).json() == {}  # the key is cached from here on
    assert statements(3, 0) == statements(40, 3)
    assert Run.objects.count() == 43 and RunStep.objects.count() == 215
    assert Run.objects.get(id=f"{4:032x}").input_tokens == 12


def _flush_after(agent, kind: str, data: dict, meanwhile) -> None:
    """Apply a record to its prefetched rows, let `meanwhile` insert a row, then write."""
    unit = Unit(agent)
    unit.prefetch(wanted_of([(kind, data)]))
    unit.record(kind, data, "records[3]")
    meanwhile()
    with transaction.atomic():
        unit.flush()


def test_a_run_inserted_meanwhile_fails_the_batch_naming_its_record(agent, conversation):
    data = {"id": "run_x", "conversation_id": "conv_1", "request_id": "r", "sdk_version": "5"}
    meanwhile = lambda: run_factory(agent=agent, id="run_x")  # noqa: E731
    with pytest.raises(BadRequest) as raised:
        _flush_after(agent, "run", data, meanwhile)
    assert raised.value.message.startswith("records[3].id: 'run_x' was recorded concurrently")


def test_a_user_external_id_taken_meanwhile_fails_the_batch_naming_its_record(agent):
    meanwhile = lambda: end_user_factory(agent=agent, external_id="ext-9")  # noqa: E731
    with pytest.raises(BadRequest) as raised:
        _flush_after(agent, "user", {"external_id": "ext-9"}, meanwhile)
    assert raised.value.message == "records[3].external_id: already recorded for another user."
