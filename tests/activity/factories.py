"""Factories for the activity models: keyword arguments, sensible defaults, saved rows."""

import itertools
from datetime import timedelta

from django.utils import timezone

from apps.activity import analytics
from apps.activity.models import Conversation, EndUser, Message, Run, RunStep

_counter = itertools.count(1)


def end_user_factory(*, agent, **fields) -> EndUser:
    n = next(_counter)
    now = timezone.now()
    defaults = {
        "external_id": f"ext-{n}",
        "identity_type": EndUser.IdentityType.USER,
        "display_name": f"Person {n}",
        "email": f"person{n}@example.org",
        "avatar_url": None,
        "first_seen_at": now - timedelta(days=1),
        "last_seen_at": now,
    }
    defaults.update(fields)
    return EndUser.objects.create(agent=agent, **defaults)


def conversation_factory(*, agent, user=None, **fields) -> Conversation:
    n = next(_counter)
    now = timezone.now()
    defaults = {
        "title": f"Conversation {n}",
        "status": "completed",
        "source": Conversation.Source.EMBED,
        "created_at": now - timedelta(minutes=5),
        "updated_at": now,
    }
    defaults.update(fields)
    return Conversation.objects.create(agent=agent, user=user, **defaults)


def message_factory(*, conversation, **fields) -> Message:
    n = next(_counter)
    defaults = {
        "role": Message.Role.USER,
        "parts": [{"type": "text", "text": f"Message {n}"}],
        "source_id": None,
        "created_at": timezone.now(),
        "updated_at": None,
    }
    defaults.update(fields)
    return Message.objects.create(
        agent_id=conversation.agent_id, conversation=conversation, **defaults
    )


def run_factory(*, agent=None, conversation=None, user=None, **fields) -> Run:
    n = next(_counter)
    if conversation is None:
        conversation = conversation_factory(agent=agent, user=user)
    agent_id = agent.pk if agent is not None else conversation.agent_id
    now = timezone.now()
    defaults = {
        "request_id": f"req-{n}",
        "status": Run.Status.COMPLETED,
        "model_id": "gpt-4.1-mini",
        "effort": None,
        "sdk_version": "5.0.0",
        "protocol_version": 1,
        "input_tokens": 1200,
        "output_tokens": 300,
        "total_tokens": 1500,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "credits_charged": 1.5,
        "tool_names": [],
        "failed_tool_names": [],
        "component_kinds": [],
        "error_code": None,
        "first_chunk_at": now - timedelta(seconds=2),
        "completed_at": now,
        "total_turn_latency_ms": 2400.0,
        "created_at": now - timedelta(seconds=3),
        "updated_at": now,
    }
    defaults.update(fields)
    run = Run.objects.create(
        agent_id=agent_id, conversation=conversation, user=user or conversation.user, **defaults
    )
    # Counted in the analytics and Overview rollup as the recording would count it.
    delta = analytics.Delta()
    delta.add_runs([analytics.run_values(run)])
    analytics.rollup_apply(agent_id, delta)
    return run


def run_step_factory(*, run, **fields) -> RunStep:
    """A step of `run` (a custom span unless `kind` says otherwise)."""
    n = next(_counter)
    now = timezone.now()
    defaults = {"id": f"st_f{n}", "name": f"step {n}", "started_at": now, "created_at": now,
                "updated_at": now}  # fmt: skip
    defaults.update(fields)
    return RunStep.objects.create(agent_id=run.agent_id, run_id=run.id, **defaults)
