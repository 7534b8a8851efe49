"""Every object the contract defines carries exactly the contract's fields (api-v1.md section 2:
"Objects carry no fields beyond those listed"). The field lists are read from the contract
itself, and each object is fetched over the API from every operation that returns it; facts
we add about a seed resource live in objects of their own (DESIGN.md, fourth round)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.utils import timezone

from apps.knowledge import services as knowledge_services
from apps.knowledge.models import KnowledgeDocument
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)
from tests.knowledge.conftest import make_file_document, upload
from tests.webhooks.factories import delivery_factory, webhook_factory

CONTRACT = Path(
    os.environ.get("CONTRACT_PATH")
    or Path(__file__).resolve().parents[3] / "shared" / "contract" / "api-v1.md"
)
_SECTION = re.compile(r"^### 2\.\d+ (.+?)(?: \(.*\))?$")
_ROW = re.compile(r"^\|\s*([a-z_]+)\s*\|")
_ATTEMPT = re.compile(r"^Attempt record fields: (.+)$")


def contract_objects() -> dict[str, set[str]]:
    """Section 2's objects by title ("Run", "Knowledge document", ...) -> their field names;
    the attempt record of 2.8 as "Attempt record"."""
    objects: dict[str, set[str]] = {}
    title = None
    for line in CONTRACT.read_text().splitlines():
        if line.startswith("## ") and objects and not line.startswith("## 2."):
            break  # past section 2
        section = _SECTION.match(line)
        if section:
            title = section.group(1)
            continue
        if title is None:
            continue
        row = _ROW.match(line)
        if row and row.group(1) != "field":
            objects.setdefault(title, set()).add(row.group(1))
        attempt = _ATTEMPT.match(line)
        if attempt:
            objects["Attempt record"] = set(re.findall(r"`([a-z_]+)`", attempt.group(1)))
    return objects


@pytest.fixture
def contract() -> dict[str, set[str]]:
    if not CONTRACT.is_file():
        pytest.skip(f"contract not available at {CONTRACT}")
    return contract_objects()


def test_the_contract_is_read_whole(contract):
    assert set(contract) == {
        "List envelope",
        "Conversation",
        "Message",
        "Run",
        "User",
        "Knowledge document",
        "Webhook",
        "Webhook delivery",
        "Attempt record",
        "Error",
    }
    assert contract["Run"] >= {"object", "id", "total_turn_latency_ms", "updated_at"}
    assert len(contract["Run"]) == 25
    assert len(contract["Knowledge document"]) == 19


def _check(found: dict[str, list[tuple[str, set[str]]]], title: str, where: str, body) -> None:
    assert isinstance(body, dict), (where, body)
    found.setdefault(title, []).append((where, set(body)))


@pytest.mark.django_db
def test_every_seed_object_has_exactly_the_contracts_keys(api, agent, contract, settings):
    settings.NETGUARD_ALLOW_LOOPBACK = True
    user = end_user_factory(agent=agent)
    conversation = conversation_factory(agent=agent, user=user)
    message_factory(conversation=conversation)
    run = run_factory(agent=agent, conversation=conversation, user=user, status="completed")
    file_document = make_file_document(agent, b"# Returns\n\nThirty days.\n", "returns.md")
    url_document = knowledge_services.document_create_from_url(
        agent=agent, url="http://127.0.0.1:9/page", refresh_interval_hours=24
    )
    KnowledgeDocument.objects.filter(pk=url_document.pk).update(
        status="ready", last_synced_at=timezone.now()
    )
    webhook = webhook_factory(agent=agent, url="http://127.0.0.1:9/hook")
    delivery = delivery_factory(webhook=webhook, run_id=run.id, status="failed")
    hooks = f"/v1/agents/{agent.pk}/webhook"
    found: dict[str, list[tuple[str, set[str]]]] = {}

    def get(path: str, status: int = 200):
        response = api.get(path)
        assert response.status == status, (path, response.body)
        return response.json()

    lists = {
        "/v1/users": "User",
        "/v1/conversations": "Conversation",
        f"/v1/conversations/{conversation.id}/messages": "Message",
        "/v1/runs": "Run",
        "/v1/knowledge": "Knowledge document",
        f"{hooks}/deliveries": "Webhook delivery",
    }
    for path, item in lists.items():
        body = get(path)
        _check(found, "List envelope", path, body)
        assert body["data"], path
        for element in body["data"]:
            _check(found, item, path, element)
    for path, title in {
        f"/v1/users/{user.id}": "User",
        f"/v1/conversations/{conversation.id}": "Conversation",
        f"/v1/runs/{run.id}": "Run",
        f"/v1/knowledge/{file_document.pk}": "Knowledge document",
        f"/v1/agents/{agent.pk}/knowledge/{file_document.pk}": "Knowledge document",
        hooks: "Webhook",
        "/v1/runs/run_missing": "Error",
    }.items():
        _check(found, title, path, get(path, 404 if title == "Error" else 200))

    # Every operation of 4.2 that answers a knowledge document.
    created = api.post("/v1/knowledge/files", data={"file": upload(b"new text", "n.md")})
    assert created.status == 201, created.body
    _check(found, "Knowledge document", "POST /v1/knowledge/files", created.json())
    created = api.post("/v1/knowledge/urls", json={"url": "http://127.0.0.1:9/other"})
    assert created.status == 201, created.body
    _check(found, "Knowledge document", "POST /v1/knowledge/urls", created.json())
    for method, path, kwargs, status in (
        ("patch", f"/v1/knowledge/{file_document.pk}", {"json": {"name": "Renamed"}}, 200),
        ("post", f"/v1/knowledge/{url_document.pk}/refresh", {}, 202),
        (
            "patch",
            f"/v1/knowledge/{url_document.pk}/schedule",
            {"json": {"refresh_interval_hours": 6}},
            200,
        ),
    ):
        response = getattr(api, method)(path, **kwargs)
        assert response.status == status, (path, response.body)
        _check(found, "Knowledge document", f"{method.upper()} {path}", response.json())

    # A retry returns the delivery, with its attempt (to a closed port) in its history.
    response = api.post(f"{hooks}/deliveries/{delivery.pk}/retry")
    assert response.status == 200, response.body
    body = response.json()
    _check(found, "Webhook delivery", "POST retry", body)
    assert body["attempt_history"]
    for attempt in body["attempt_history"]:
        _check(found, "Attempt record", "POST retry attempt_history", attempt)

    assert set(found) == set(contract), "an object of the contract was not fetched"
    wrong = [
        (title, where, sorted(keys - contract[title]), sorted(contract[title] - keys))
        for title, seen in found.items()
        for where, keys in seen
        if keys != contract[title]
    ]
    assert wrong == [], "(object, where, extra keys, missing keys)"
