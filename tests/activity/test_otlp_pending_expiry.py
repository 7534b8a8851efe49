"""Spans whose parent never arrives stop waiting after OTLP_PENDING_SPAN_TTL_SECONDS: the beat
sweeper records them at the top of their trace's run, or drops them when the run is unknown."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.conf import settings

from apps.activity.models import PendingSpan, Run, RunStep
from apps.activity.pending_spans import pending_spans_expire
from config.celery import app
from tests.activity.test_otlp import ROOT, TRACE, _body, _post, _span

pytestmark = pytest.mark.django_db

RECEIVED = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LOST_PARENT = "dddddddddddddd04"
ORPHAN = "eeeeeeeeeeeeee05"
OTHER_TRACE = "6b8efff798038103d269b633813fc60c"


@pytest.fixture
def writer(make_api):
    return make_api(scopes=["activity:write", "runs:read"])


def _waiting(writer) -> None:
    """A run (its root span), a tool span whose parent never comes, and a span of a trace whose
    run never comes."""
    with time_machine.travel(RECEIVED, tick=False):
        root = _span(
            ROOT, name="invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
        )
        assert _post(writer, _body(root)).json() == {}
        tool = _span(ORPHAN, parent=LOST_PARENT, name="execute_tool lookup",
                     attributes={"gen_ai.operation.name": "execute_tool",
                                 "gen_ai.tool.name": "lookup"})  # fmt: skip
        lost = _span("fffffffffffff006", parent="fffffffffffff007", trace=OTHER_TRACE)
        assert _post(writer, _body(tool, lost)).json() == {}
    assert PendingSpan.objects.count() == 2


def test_spans_wait_until_the_time_is_up(writer):
    _waiting(writer)
    ttl = timedelta(seconds=settings.OTLP_PENDING_SPAN_TTL_SECONDS)
    with time_machine.travel(RECEIVED + ttl - timedelta(seconds=1), tick=False):
        result = pending_spans_expire()
    assert (result.recorded, result.dropped) == (0, 0)
    assert PendingSpan.objects.count() == 2


def test_an_expired_span_is_recorded_at_the_top_of_its_run_and_the_rest_dropped(writer):
    _waiting(writer)
    ttl = timedelta(seconds=settings.OTLP_PENDING_SPAN_TTL_SECONDS)
    with time_machine.travel(RECEIVED + ttl + timedelta(seconds=1), tick=False):
        result = pending_spans_expire()
    assert (result.recorded, result.dropped) == (1, 1)
    assert not PendingSpan.objects.exists()
    step = RunStep.objects.get(id=ORPHAN)
    assert step.run_id == TRACE and step.parent_id is None
    assert step.attributes["otel.parent_span_id"] == LOST_PARENT
    assert step.kind == "tool" and step.tool_name == "lookup"
    # The run follows its steps as for any recorded span.
    assert Run.objects.get(id=TRACE).tool_names == ["lookup"]
    assert not Run.objects.filter(id=OTHER_TRACE).exists()
    steps = writer.get(f"/v1/runs/{TRACE}/steps").json()["data"]
    assert {item["id"] for item in steps} == {ROOT, ORPHAN}


def test_the_sweep_is_bounded_and_drains_over_ticks(writer):
    _waiting(writer)
    later = RECEIVED + timedelta(seconds=settings.OTLP_PENDING_SPAN_TTL_SECONDS + 5)
    with time_machine.travel(later, tick=False):
        first = pending_spans_expire(limit=1)
        assert first.recorded + first.dropped == 1
        assert PendingSpan.objects.count() == 1
        second = pending_spans_expire(limit=1)
    assert second.recorded + second.dropped == 1
    assert not PendingSpan.objects.exists()


def test_beat_runs_the_sweeper():
    entry = settings.CELERY_BEAT_SCHEDULE["activity-expire-pending-spans"]
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
