"""A full walk over a few thousand rows per list while another connection inserts new rows:
every row that existed at the start comes back exactly once, in order, with no duplicates."""

import itertools
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from apps.activity.models import Conversation, EndUser, Message, Run

pytestmark = pytest.mark.django_db(transaction=True)

N = 2500
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _seed(agent):
    users = [
        EndUser(id=f"usr_{i:06d}", agent=agent, identity_type="user",
                first_seen_at=T0, last_seen_at=T0 + timedelta(seconds=i // 3))
        for i in range(N)
    ]  # fmt: skip
    EndUser.objects.bulk_create(users)
    conversations = [
        Conversation(id=f"conv_{i:06d}", agent=agent, user=users[i % 50], created_at=T0,
                     updated_at=T0 + timedelta(seconds=i // 3))
        for i in range(N)
    ]  # fmt: skip
    Conversation.objects.bulk_create(conversations)
    Message.objects.bulk_create(
        Message(id=f"msg_{i:06d}", agent=agent, conversation=conversations[0], role="user",
                parts=[], created_at=T0 + timedelta(seconds=i // 3))
        for i in range(N)
    )  # fmt: skip
    Run.objects.bulk_create(
        Run(id=f"run_{i:06d}", agent=agent, conversation=conversations[i % 100], request_id="r",
            sdk_version="5", created_at=T0 + timedelta(seconds=i // 3), updated_at=T0)
        for i in range(N)
    )  # fmt: skip


class Inserter(threading.Thread):
    """Inserts rows newer than the walk's start (and, for messages, later ones) until stopped."""

    def __init__(self, agent):
        super().__init__(daemon=True)
        self.agent = agent
        self.stop = threading.Event()
        self.inserted = 0

    def run(self):
        try:
            now = datetime.now(UTC)
            for n in itertools.count():
                if self.stop.is_set():
                    break
                moment = now + timedelta(seconds=n)
                user = EndUser.objects.create(
                    id=f"usr_new{n}", agent=self.agent, first_seen_at=moment, last_seen_at=moment
                )
                conversation = Conversation.objects.create(
                    id=f"conv_new{n}", agent=self.agent, user=user, created_at=moment,
                    updated_at=moment,
                )  # fmt: skip
                Message.objects.create(
                    id=f"msg_new{n}", agent=self.agent, conversation_id="conv_000000",
                    role="assistant", created_at=moment,
                )  # fmt: skip
                Run.objects.create(
                    id=f"run_new{n}", agent=self.agent, conversation=conversation,
                    request_id="r", sdk_version="5", created_at=moment, updated_at=moment,
                )  # fmt: skip
                self.inserted += 1
        finally:
            connection.close()


def _walk(api, path):
    ids, cursor, pages = [], None, 0
    while True:
        params = {"limit": 100} | ({"after": cursor} if cursor else {})
        response = api.get(path, params=params)
        assert response.status == 200, response.body
        body = response.json()
        ids += [row["id"] for row in body["data"]]
        pages += 1
        if not body["has_more"]:
            assert body["next_cursor"] is None
            return ids, pages
        cursor = body["next_cursor"]


@pytest.mark.parametrize(
    ("path", "prefix"),
    [
        ("/v1/users", "usr_"),
        ("/v1/conversations", "conv_"),
        ("/v1/conversations/conv_000000/messages", "msg_"),
        ("/v1/runs", "run_"),
    ],
)
def test_walk_returns_every_existing_row_once_during_inserts(
    make_api, settings, agent, path, prefix
):
    settings.API_RATE_LIMIT = "100000/minute"
    _seed(agent)
    api = make_api()
    inserter = Inserter(agent)
    inserter.start()
    try:
        ids, pages = _walk(api, path)
    finally:
        inserter.stop.set()
        inserter.join()
    assert inserter.inserted > 0
    assert len(ids) == len(set(ids)), "a row came back twice"
    existing = {f"{prefix}{i:06d}" for i in range(N)}
    assert existing <= set(ids)
    assert pages >= N // 100
    seeded_order = [row_id for row_id in ids if row_id in existing]
    descending = not path.endswith("/messages")
    # Within the seeded rows the order is the list's: sort key, then id, both one direction.
    expected = sorted(existing, key=lambda r: (int(r[len(prefix) :]) // 3, r), reverse=descending)
    assert seeded_order == expected
