"""The /v1 lists on PostgreSQL run SQL compiled once per shape of query (apps.common.listing):
every filter, combination and cursor must page exactly as the ORM path does (same objects,
same order, cursors with the same signed payload), with one statement per shape and one query
a page. (Their plans: test_api_contract's index-scan test explains both paths.)"""

import itertools
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
from django.db import connection
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext

from apps.activity import selectors
from apps.activity.models import Run
from apps.activity.rendering import CONVERSATION, MESSAGE, RUN, USER
from apps.common.keyset import PageRequest, cursor_decode, cursor_encode, paginate
from apps.common.listing import Condition, ListQuery, compiled_list
from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)
from tests.examples import share

pytestmark = pytest.mark.django_db

BASE = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("the compiled lists are PostgreSQL's; SQLite lists through the ORM")


def _at(seconds: int, micro: int = 0) -> datetime:
    return BASE + timedelta(seconds=seconds, microseconds=micro)


@pytest.fixture
def activity(agent, other_agent):
    """Users, conversations, runs and messages whose filter values and times overlap (ties to
    the microsecond included); the other Agent holds rows with the same values."""
    for owner in (other_agent, agent):  # the other Agent's rows first: older row keys
        ada = end_user_factory(agent=owner, external_id="ada", last_seen_at=_at(5))
        bob = end_user_factory(agent=owner, external_id="bob", last_seen_at=_at(5))
        end_user_factory(agent=owner, external_id="cy", last_seen_at=_at(5, 1))
        end_user_factory(agent=owner, external_id=None, last_seen_at=_at(1))
        conversations = [
            conversation_factory(
                agent=owner,
                user=(ada, bob, None)[n % 3],
                status=("completed", "failed", "streaming", None)[n % 4],
                source=("embed", "preview", None)[n % 3],
                updated_at=_at(n // 2, n % 2),
            )
            for n in range(9)
        ]
        for n in range(16):
            conversation = conversations[n % 3]
            run_factory(
                conversation=conversation,
                user=(ada, bob, None)[n % 3],
                status=("completed", "failed")[n % 2],
                model_id=("m1", "m2", None)[n % 3],
                error_code="E1" if n % 4 == 1 else None,
                created_at=_at(n // 3, n % 2),
                first_chunk_at=None if n % 5 == 0 else _at(n, 999_999),
                tool_names=["search", 'fetch "ü"'] if n % 2 else [],
                failed_tool_names=['fetch "ü"'] if n % 4 == 1 else [],
                document_ids=["kdoc_1"] if n % 3 == 0 else [],
                environment=("production", "staging", None)[n % 3],
                release=("1.4.2", "1.5.0")[n % 2],
                tags=["beta", "vip"] if n % 4 == 0 else ["beta"] if n % 4 == 2 else [],
                metadata={"tier": ("gold", "free")[n % 2], "seats": n % 3},
            )
        for n in range(7):
            message_factory(
                conversation=conversations[0],
                created_at=_at(n // 2),
                parts=[{"type": "text", "text": f"m{n}"}, {"b": [1.5, None]}],
            )
    return {
        "user_id": ada.id,
        "conversation_id": conversations[0].id,
        "external_id": "ada",
    }


def _meaning(envelope: dict, keyset) -> dict:
    """The envelope with its cursor decoded: signed cursors carry the second they were made."""
    cursor = envelope["next_cursor"]
    return {**envelope, "next_cursor": cursor and cursor_decode(keyset, cursor)}


def _walk_both(query, *, keyset, shape, limit):
    """Walk a list to its end through the ORM and through the compiled SQL, page by page, and
    hold every envelope equal; the ids seen, in order."""
    compiled = compiled_list(query.model, shape, keyset)
    after, seen = None, []
    while True:
        wanted = PageRequest(limit=limit, after=after)
        by_orm = paginate(query.queryset(), keyset=keyset, page=wanted)
        by_sql = compiled.page(query, wanted)
        expected = by_orm.envelope(shape.from_model)
        assert _meaning(by_sql.envelope(shape.from_row), keyset) == _meaning(expected, keyset)
        seen += [item["id"] for item in expected["data"]]
        if not expected["has_more"]:
            return seen
        after = expected["next_cursor"]


def _subsets(values: dict):
    for size in range(len(values) + 1):
        for names in itertools.combinations(values, size):
            yield {name: values[name] for name in names}


def test_every_run_filter_and_combination_pages_as_the_orm_does(agent, activity):
    values = {
        "conversation_id": activity["conversation_id"],
        "user_id": activity["user_id"],
        "status": "failed",
        "model_id": "m1",
        "error_code": "E1",
        "created_after": _at(1, 1),
        "created_before": _at(4),
        "environment": "production",
        "release": "1.5.0",
        "tag": "beta",
        "metadata": {"seats": 1},
    }
    sizes = set()
    unfiltered, *combinations = _subsets(values)
    # All 2,047 combinations in `make test`; a share of them in the loop (tests/examples.py).
    for filters in [unfiltered, *share(combinations)]:
        query = selectors.run_query(agent=agent, filters=filters)
        seen = _walk_both(query, keyset=selectors.RUN_KEYSET, shape=RUN, limit=3)
        sizes.add(len(seen))
    assert max(sizes) == 16 and len(sizes) > 4  # the filters do select


def test_every_conversation_filter_and_combination_pages_as_the_orm_does(agent, activity):
    values = {
        "user_id": activity["user_id"],
        "status": "failed",
        "source": "embed",
        "updated_after": _at(1),
        "updated_before": _at(3, 1),
    }
    sizes = set()
    for filters in _subsets(values):
        query = selectors.conversation_query(agent=agent, filters=filters)
        seen = _walk_both(query, keyset=selectors.CONVERSATION_KEYSET, shape=CONVERSATION, limit=2)
        sizes.add(len(seen))
    assert max(sizes) == 9 and len(sizes) > 3


def test_conversation_filters_by_their_runs_page_as_the_orm_does(agent, activity):
    """Filters on what a conversation's runs were: one run must meet them all together."""
    values = {
        "environment": "staging",
        "release": "1.4.2",
        "tag": "vip",
        "metadata": {"tier": "free"},
        "model_id": "m2",
        "tool_name": "search",
        "error_code": "E1",
        "status": "failed",
    }
    sizes = {}
    for filters in _subsets(values):
        query = selectors.conversation_query(agent=agent, filters=filters)
        seen = _walk_both(query, keyset=selectors.CONVERSATION_KEYSET, shape=CONVERSATION, limit=2)
        sizes[tuple(filters)] = len(seen)
    assert sizes[()] == 9
    # Runs of conversation n % 3 == 1 are staging (n % 3 == 1) and have model m2: one conversation.
    assert sizes[("environment",)] == 1 and sizes[("environment", "model_id")] == 1
    # Staging runs (n = 1, 4, 7, 10, 13) and vip runs (n % 4 == 0: 4) meet in run 4 only; a
    # conversation with a staging run and another vip run would not count.
    assert sizes[("environment", "tag")] == 1
    assert sizes[("environment", "release")] == 1  # run 4 (even: 1.4.2)
    assert sizes[("tag", "error_code")] == 0  # vip runs (n % 4 == 0) never failed with E1


def test_users_and_messages_page_as_the_orm_does(agent, activity):
    for filters in ({}, {"external_id": "ada"}, {"external_id": "nobody"}):
        query = selectors.user_query(agent=agent, filters=filters)
        _walk_both(query, keyset=selectors.USER_KEYSET, shape=USER, limit=1)
    query = selectors.message_query(agent=agent, conversation_id=activity["conversation_id"])
    seen = _walk_both(query, keyset=selectors.MESSAGE_KEYSET, shape=MESSAGE, limit=2)
    assert len(seen) == 7


def test_api_filters_answer_what_the_orm_path_answers(make_api, agent, activity):
    api = make_api()
    cases = [
        ("/v1/runs", selectors.RUN_FILTERS, selectors.run_list, selectors.RUN_KEYSET, RUN),
        (
            "/v1/conversations",
            selectors.CONVERSATION_FILTERS,
            selectors.conversation_list,
            selectors.CONVERSATION_KEYSET,
            CONVERSATION,
        ),
        ("/v1/users", selectors.USER_FILTERS, selectors.user_list, selectors.USER_KEYSET, USER),
    ]
    raw = {
        "conversation_id": activity["conversation_id"],
        "user_id": activity["user_id"],
        "status": "failed",
        "source": "preview",
        "model_id": "m2",
        "error_code": "E1",
        "tool_name": 'fetch "ü"',
        "failed_tool": 'fetch "ü"',
        "document_id": "kdoc_1",
        "external_id": "ada",
        "environment": "production",
        "release": "1.4.2",
        "tag": "vip",
        "metadata": "tier:gold",
        "created_after": "2026-03-01T12:00:01.000001Z",
        "created_before": "2026-03-01T12:00:04Z",
        "updated_after": "2026-03-01",
        "updated_before": "2026-03-01T13:00:03+01:00",
    }
    paths = lambda path: (path, f"/v1/agents/{agent.pk}" + path.removeprefix("/v1"))  # noqa: E731
    for path, specs, orm_list, keyset, shape in cases:
        for spec in specs:
            filters = selectors.filters_parse({spec.name: raw[spec.name]}, specs)
            orm = paginate(
                orm_list(agent=agent, filters=filters),
                keyset=keyset,
                page=PageRequest(limit=2, after=None),
            )
            params = {spec.name: quote(raw[spec.name]), "limit": "2"}
            for url in paths(path):
                answer = api.get(url, params=params)
                assert answer.status == 200, (url, spec.name, answer.body)
                assert _meaning(answer.json(), keyset) == _meaning(
                    orm.envelope(shape.from_model), keyset
                ), (url, spec.name)


def test_cursors_pass_between_the_orm_path_and_the_compiled_one(api, agent, activity):
    orm_first = paginate(
        selectors.run_list(agent=agent),
        keyset=selectors.RUN_KEYSET,
        page=PageRequest(limit=5, after=None),
    )
    answer = api.get("/v1/runs", params={"limit": "5"}).json()
    keyset = selectors.RUN_KEYSET
    assert cursor_decode(keyset, answer["next_cursor"]) == cursor_decode(
        keyset, orm_first.next_cursor
    )
    # The same payload, signed the same way: only the signing second may differ.
    assert answer["next_cursor"].split(":")[0] == orm_first.next_cursor.split(":")[0]
    # The ORM path's cursor (a model instance's datetime) on the compiled path, and back.
    second = api.get("/v1/runs", params={"limit": "5", "after": orm_first.next_cursor}).json()
    orm_second = paginate(
        selectors.run_list(agent=agent),
        keyset=selectors.RUN_KEYSET,
        page=PageRequest(limit=5, after=second["next_cursor"]),
    )
    third = api.get("/v1/runs", params={"limit": "5", "after": second["next_cursor"]}).json()
    assert [item["id"] for item in third["data"]] == [run.id for run in orm_second.rows]
    ids = [item["id"] for page in (answer, second, third) for item in page["data"]]
    assert len(set(ids)) == 15


def test_a_cursor_of_another_list_or_a_forged_one_is_still_400(api, agent, activity):
    users = api.get("/v1/users", params={"limit": "1"}).json()
    for after in (users["next_cursor"], "not-a-cursor", users["next_cursor"][:-2] + "xx"):
        answer = api.get("/v1/runs", params={"after": after})
        assert answer.status == 400 and answer.json()["name"] == "bad_request", after


def test_the_sql_is_compiled_once_per_shape_of_query(make_api, agent, activity):
    compiled = compiled_list(Run, RUN, selectors.RUN_KEYSET)
    compiled.statements.clear()
    api = make_api()

    def walk(params: dict) -> None:
        after = None
        while True:
            body = api.get("/v1/runs", params={**params, **({"after": after} if after else {})})
            page = body.json()
            if not page["has_more"]:
                return
            after = page["next_cursor"]

    for status in ("failed", "completed", "aborted"):
        walk({"limit": "4", "status": status})
    walk({"limit": "5"})
    walk({"limit": "2", "created_after": "2026-03-01T12:00:02Z", "status": "failed"})
    statements = dict(compiled.statements)
    assert set(statements) == {
        ((("agent", "exact"), ("status", "exact")), False),
        ((("agent", "exact"), ("status", "exact")), True),
        ((("agent", "exact"),), False),
        ((("agent", "exact"),), True),
        ((("agent", "exact"), ("status", "exact"), ("created_at", "gte")), False),
        ((("agent", "exact"), ("status", "exact"), ("created_at", "gte")), True),
    }
    # More requests of the same shapes write nothing: the very same strings are reused.
    walk({"limit": "3", "status": "completed"})
    walk({"limit": "7"})
    assert all(compiled.statements[key] is statements[key] for key in statements)
    assert len(compiled.statements) == len(statements)


def test_a_page_is_one_query_and_django_compiles_nothing_for_it(api, agent, activity, monkeypatch):
    api.get("/v1/runs")  # the key is looked up and cached once
    compilations = []
    as_sql = SQLCompiler.as_sql

    def counting(self, *args, **kwargs):
        compilations.append(self.query.model)
        return as_sql(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counting)
    for path in (
        "/v1/runs?limit=100&status=failed",
        "/v1/users?limit=100",
        "/v1/conversations?limit=100",
    ):
        with CaptureQueriesContext(connection) as queries:
            answer = api.get(path)
        assert answer.status == 200
        lists = [q["sql"] for q in queries if q["sql"].startswith('SELECT "id"')]
        assert len(lists) == 1, queries.captured_queries
        assert "AT TIME ZONE" in lists[0]
    assert [m for m in compilations if m is not None and m._meta.app_label == "activity"] == []


def test_a_signed_cursor_with_a_numeric_id_pages_as_the_orm_does(api, agent, activity):
    """The ORM coerced such an id to text (the benchmark's cursor carried the row key once);
    the compiled path must not answer 500 for it."""
    middle = selectors.run_list(agent=agent).order_by(*selectors.RUN_KEYSET.order_by)[7]
    cursor = cursor_encode(selectors.RUN_KEYSET, middle.created_at, 12345)
    orm = paginate(
        selectors.run_list(agent=agent),
        keyset=selectors.RUN_KEYSET,
        page=PageRequest(limit=20, after=cursor),
    )
    answer = api.get("/v1/runs", params={"after": cursor})
    assert answer.status == 200
    assert [item["id"] for item in answer.json()["data"]] == [run.id for run in orm.rows]


def test_a_compiled_list_refuses_to_compare_with_none(agent):
    """`= NULL` would match nothing where the ORM's `user_id=None` matches the null ones."""
    query = ListQuery(
        Run, (Condition("agent", "exact", agent.pk), Condition("user_id", "exact", None))
    )
    with pytest.raises(ValueError, match="None"):
        compiled_list(Run, RUN, selectors.RUN_KEYSET).page(query, PageRequest(limit=5, after=None))
