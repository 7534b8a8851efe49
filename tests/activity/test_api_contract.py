"""Contract 4.1 over HTTP: exact objects, orders, scopes, tenancy, filters and query counts."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from tests.activity.factories import (
    conversation_factory,
    end_user_factory,
    message_factory,
    run_factory,
)
from tests.activity.test_rendering import (
    CONVERSATION_FIELDS,
    MESSAGE_FIELDS,
    RUN_FIELDS,
    USER_FIELDS,
)
from tests.examples import examples

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 3, 1, tzinfo=UTC)
LIST_FIELDS = {"object", "data", "has_more", "next_cursor"}


@pytest.fixture
def activity(agent):
    user = end_user_factory(agent=agent, last_seen_at=T0)
    conversation = conversation_factory(agent=agent, user=user, updated_at=T0)
    messages = [
        message_factory(conversation=conversation, created_at=T0 + timedelta(seconds=i))
        for i in range(3)
    ]
    run = run_factory(agent=agent, conversation=conversation, created_at=T0)
    return {"user": user, "conversation": conversation, "messages": messages, "run": run}


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("path", "fields"),
    [
        ("/v1/users", USER_FIELDS),
        ("/v1/conversations", CONVERSATION_FIELDS),
        ("/v1/runs", RUN_FIELDS),
    ],
)
def test_lists_return_the_envelope_with_exact_items(api, activity, path, fields):
    response = api.get(path)
    assert response.status == 200
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == LIST_FIELDS
    assert body["object"] == "list"
    assert body["has_more"] is False
    assert body["next_cursor"] is None
    assert len(body["data"]) == 1
    assert set(body["data"][0]) == fields


@pytest.mark.smoke
def test_messages_of_a_conversation_oldest_first(api, activity):
    conversation = activity["conversation"]
    body = api.get(f"/v1/conversations/{conversation.id}/messages").json()
    assert [m["id"] for m in body["data"]] == [m.id for m in activity["messages"]]
    assert all(set(m) == MESSAGE_FIELDS for m in body["data"])


@pytest.mark.smoke
def test_an_empty_page_of_messages_tells_an_empty_conversation_from_a_missing_one(
    api, agent, activity
):
    # The conversation is looked up only when a page has no message (a message proves it).
    empty = conversation_factory(agent=agent, user=activity["user"])
    assert api.get(f"/v1/conversations/{empty.id}/messages").json()["data"] == []
    conversation = activity["conversation"]
    first = api.get(f"/v1/conversations/{conversation.id}/messages?limit=2").json()
    activity["messages"][-1].delete()  # the page after the cursor is now empty
    rest = api.get(f"/v1/conversations/{conversation.id}/messages?after={first['next_cursor']}")
    assert rest.status == 200 and rest.json()["data"] == []
    missing = api.get("/v1/conversations/conv_01NOSUCHCONVERSATION000000/messages")
    assert missing.status == 404 and missing.json()["name"] == "not_found"


@pytest.mark.parametrize(
    ("path", "key", "object_name"),
    [
        ("/v1/users/{}", "user", "user"),
        ("/v1/conversations/{}", "conversation", "conversation"),
        ("/v1/runs/{}", "run", "run"),
    ],
)
def test_retrieve_returns_the_object_in_both_path_forms(
    api, agent, activity, path, key, object_name
):
    row = activity[key]
    for prefix in ("", f"/agents/{agent.pk}"):
        response = api.get(path.format(row.id).replace("/v1", f"/v1{prefix}", 1))
        assert response.status == 200
        assert response.json()["object"] == object_name
        assert response.json()["id"] == row.id


@pytest.mark.parametrize(
    ("path", "scope"),
    [
        ("/v1/users", "users:read"),
        ("/v1/users/x", "users:read"),
        ("/v1/conversations", "conversations:read"),
        ("/v1/conversations/x", "conversations:read"),
        ("/v1/conversations/x/messages", "conversations:read"),
        ("/v1/runs", "runs:read"),
        ("/v1/runs/x", "runs:read"),
    ],
)
def test_missing_scope_is_insufficient_scope_naming_it(make_api, path, scope):
    others = ["knowledge:read", "users:read", "conversations:read", "runs:read"]
    client = make_api(scopes=[s for s in others if s != scope])
    response = client.get(path)
    assert response.status == 403
    assert response.json()["name"] == "insufficient_scope"
    assert f'scope="{scope}"' in response.headers["WWW-Authenticate"]


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/v1/users/{}", "user"),
        ("/v1/conversations/{}", "conversation"),
        ("/v1/conversations/{}/messages", "conversation"),
        ("/v1/runs/{}", "run"),
    ],
)
def test_another_agents_resource_is_not_found(
    make_api, other_agent, sibling_agent, activity, path, key
):
    for agent in (other_agent, sibling_agent):
        client = make_api(for_agent=agent)
        response = client.get(path.format(activity[key].id))
        assert response.status == 404
        assert response.json()["name"] == "not_found"


def test_lists_never_show_another_agents_rows(make_api, sibling_agent, activity):
    client = make_api(for_agent=sibling_agent)
    for path in ("/v1/users", "/v1/conversations", "/v1/runs"):
        assert client.get(path).json()["data"] == []


def test_agent_path_of_another_agent_is_not_found(api, sibling_agent, activity):
    response = api.get(f"/v1/agents/{sibling_agent.pk}/runs")
    assert response.status == 404


def test_runs_filters(api, agent, activity):
    conversation = activity["conversation"]
    other = conversation_factory(agent=agent)
    failed = run_factory(
        agent=agent, conversation=other, status="failed", created_at=T0 + timedelta(hours=1)
    )
    data = api.get("/v1/runs", params={"status": "failed"}).json()["data"]
    assert [r["id"] for r in data] == [failed.id]
    data = api.get("/v1/runs", params={"conversation_id": conversation.id}).json()["data"]
    assert [r["id"] for r in data] == [activity["run"].id]
    after = (T0 + timedelta(minutes=30)).isoformat().replace("+00:00", "Z")
    data = api.get("/v1/runs", params={"created_after": after}).json()["data"]
    assert [r["id"] for r in data] == [failed.id]
    data = api.get("/v1/runs", params={"created_before": after}).json()["data"]
    assert [r["id"] for r in data] == [activity["run"].id]
    failed.model_id, failed.error_code = "small-model", "timeout"
    failed.save(update_fields=["model_id", "error_code"])
    data = api.get("/v1/runs", params={"error_code": "timeout"}).json()["data"]
    assert [r["id"] for r in data] == [failed.id]
    data = api.get("/v1/runs", params={"model_id": "small-model"}).json()["data"]
    assert [r["id"] for r in data] == [failed.id]


def test_conversation_filters(api, agent, activity):
    other = conversation_factory(agent=agent, status="failed", source="preview")
    assert [
        c["id"] for c in api.get("/v1/conversations", params={"status": "failed"}).json()["data"]
    ] == [other.id]
    assert [
        c["id"] for c in api.get("/v1/conversations", params={"source": "preview"}).json()["data"]
    ] == [other.id]
    by_user = api.get("/v1/conversations", params={"user_id": activity["user"].id}).json()["data"]
    assert [c["id"] for c in by_user] == [activity["conversation"].id]


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/v1/runs", "status=done"),
        ("/v1/runs", "created_after=yesterday"),
        ("/v1/runs", "created_before=2025-13-01"),
        ("/v1/conversations", "source=web"),
        ("/v1/conversations", "updated_after=x"),
        ("/v1/runs", "limit=0"),
        ("/v1/users", "limit=101"),
        ("/v1/users", "after=forged"),
    ],
)
def test_bad_filter_or_page_value_is_bad_request(api, path, query):
    response = api.get(f"{path}?{query}")
    assert response.status == 400
    assert response.json()["name"] == "bad_request"
    assert query.split("=")[0] in response.json()["message"]


def test_cursor_of_one_list_is_refused_by_another(api, agent):
    for i in range(3):
        run_factory(agent=agent, created_at=T0 + timedelta(seconds=i))
    cursor = api.get("/v1/runs?limit=1").json()["next_cursor"]
    assert api.get(f"/v1/runs?limit=1&after={cursor}").status == 200
    assert api.get(f"/v1/conversations?limit=1&after={cursor}").status == 400


def test_runs_newest_first_ties_by_id(api, agent):
    conversation = conversation_factory(agent=agent)
    runs = [
        run_factory(agent=agent, conversation=conversation, id=f"run_{c}", created_at=T0)
        for c in "abc"
    ]
    runs.append(
        run_factory(
            agent=agent, conversation=conversation, id="run_z", created_at=T0 - timedelta(seconds=1)
        )
    )
    ids = []
    cursor = None
    while True:
        params = {"limit": 1} | ({"after": cursor} if cursor else {})
        body = api.get("/v1/runs", params=params).json()
        ids += [r["id"] for r in body["data"]]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            break
        cursor = body["next_cursor"]
    assert ids == ["run_c", "run_b", "run_a", "run_z"]


def test_users_most_recently_seen_first(api, agent):
    old = end_user_factory(agent=agent, last_seen_at=T0)
    new = end_user_factory(agent=agent, last_seen_at=T0 + timedelta(days=1))
    assert [u["id"] for u in api.get("/v1/users").json()["data"]] == [new.id, old.id]


# --- constant queries ------------------------------------------------------------------------


def _fill(agent, n=105):
    user = end_user_factory(agent=agent)
    conversation = conversation_factory(agent=agent, user=user)
    for i in range(n):
        end_user_factory(agent=agent)
        conversation_factory(agent=agent, user=user)
        message_factory(conversation=conversation, created_at=T0 + timedelta(seconds=i))
        run_factory(agent=agent, conversation=conversation, created_at=T0 + timedelta(seconds=i))
    return conversation


@pytest.mark.parametrize(
    ("path", "queries"),
    [("/v1/runs", 1), ("/v1/users", 1), ("/v1/conversations", 1), ("messages", 1)],
)
def test_a_page_of_100_costs_a_constant_number_of_queries(
    api, agent, django_assert_num_queries, path, queries, settings
):
    conversation = _fill(agent)
    if path == "messages":
        path = f"/v1/conversations/{conversation.id}/messages"
    api.get("/v1/connection")  # the once-a-minute last_used_at write happens here
    # With Redis the key row comes from the cache; without it, one query looks it up.
    queries += 0 if settings.REDIS_URL else 1
    with django_assert_num_queries(queries):  # (the key lookup), the page
        first = api.get(f"{path}?limit=100").json()
    assert len(first["data"]) == 100
    with django_assert_num_queries(queries):
        second = api.get(f"{path}?limit=100&after={first['next_cursor']}").json()
    assert len(second["data"]) >= 5


def _bulk_fill_with_sql(agent_id: str, n: int) -> None:
    """n conversations, users, messages and runs in a few statements (generate_series)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO activity_enduser (id, agent_id, external_id, identity_type, "
            "first_seen_at, last_seen_at) SELECT 'usr_' || %(a)s || g, %(a)s, 'e' || g, 'user', "
            "now() - g * interval '1 minute', now() - g * interval '1 second' "
            "FROM generate_series(1, %(n)s) g",
            {"a": agent_id, "n": n},
        )
        cursor.execute(
            "INSERT INTO activity_conversation (id, agent_id, user_id, status, created_at, "
            "updated_at) SELECT 'conv_' || %(a)s || g, %(a)s, 'usr_' || %(a)s || (g %% 50 + 1), "
            "(ARRAY['completed','failed','aborted','streaming'])[g %% 4 + 1], "
            "now() - g * interval '1 minute', now() - g * interval '1 second' "
            "FROM generate_series(1, %(n)s) g",
            {"a": agent_id, "n": n},
        )
        cursor.execute(
            "INSERT INTO activity_message (id, agent_id, conversation_id, role, parts, "
            "created_at) SELECT 'msg_' || %(a)s || g, %(a)s, 'conv_' || %(a)s || (g %% 20 + 1), "
            "'user', '[]', now() - g * interval '1 second' FROM generate_series(1, %(n)s) g",
            {"a": agent_id, "n": n},
        )
        cursor.execute(
            "INSERT INTO activity_run (id, agent_id, conversation_id, user_id, request_id, status, "
            "sdk_version, protocol_version, tool_names, failed_tool_names, component_kinds, "
            "created_at, updated_at, model_id, error_code) SELECT 'run_' || %(a)s || g, %(a)s, "
            "'conv_' || %(a)s || (g %% 200 + 1), 'usr_' || %(a)s || (g %% 50 + 1), 'r' || g, "
            "(ARRAY['completed','failed','aborted','streaming'])[g %% 4 + 1], '5', 1, "
            "'[]', '[]', '[]', now() - g * interval '1 second', now(), "
            "(ARRAY['gpt-test','gpt-other','gpt-third','gpt-fourth'])[g %% 4 + 1], "
            "CASE WHEN g %% 16 = 1 THEN 'timeout' END "
            "FROM generate_series(1, %(n)s) g",
            {"a": agent_id, "n": n},
        )
        cursor.execute(
            "ANALYZE activity_enduser, activity_conversation, activity_message, activity_run"
        )


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL plans")
def test_every_list_and_filter_is_an_index_range_scan_without_sort(agent, other_agent):
    """Through the ORM (console, SQLite's path) and through the compiled SQL of the /v1 lists
    (apps.common.listing), first page and deep."""
    from apps.activity import selectors
    from apps.activity.rendering import CONVERSATION, MESSAGE, RUN, USER
    from apps.common.keyset import page_request, paginate
    from apps.common.listing import compiled_list

    # 20,000 rows of each kind per Agent in `make test`, a third in the loop (tests/examples.py).
    rows = examples(20000)
    _bulk_fill_with_sql(agent.pk, rows)
    _bulk_fill_with_sql(other_agent.pk, rows)
    conversation_id = f"conv_{agent.pk}1"
    cases = [
        (selectors.user_query(agent=agent), selectors.USER_KEYSET, USER, "enduser_agent_seen"),
        (
            selectors.conversation_query(agent=agent),
            selectors.CONVERSATION_KEYSET,
            CONVERSATION,
            "conv_agent_updated",
        ),
        (
            selectors.conversation_query(agent=agent, filters={"status": "failed"}),
            selectors.CONVERSATION_KEYSET,
            CONVERSATION,
            "conv_agent_status",
        ),
        (
            selectors.conversation_query(agent=agent, filters={"user_id": f"usr_{agent.pk}3"}),
            selectors.CONVERSATION_KEYSET,
            CONVERSATION,
            "conv_agent_user",
        ),
        (
            selectors.message_query(agent=agent, conversation_id=conversation_id),
            selectors.MESSAGE_KEYSET,
            MESSAGE,
            "msg_conv_created",
        ),
        (selectors.run_query(agent=agent), selectors.RUN_KEYSET, RUN, "run_agent_created"),
        (
            selectors.run_query(agent=agent, filters={"status": "failed"}),
            selectors.RUN_KEYSET,
            RUN,
            "run_agent_status",
        ),
        (
            selectors.run_query(agent=agent, filters={"conversation_id": conversation_id}),
            selectors.RUN_KEYSET,
            RUN,
            "run_agent_conv",
        ),
        (
            selectors.run_query(agent=agent, filters={"user_id": f"usr_{agent.pk}3"}),
            selectors.RUN_KEYSET,
            RUN,
            "run_agent_user",
        ),
        (
            selectors.run_query(agent=agent, filters={"model_id": "gpt-test"}),
            selectors.RUN_KEYSET,
            RUN,
            "run_agent_model",
        ),
        (
            selectors.run_query(agent=agent, filters={"error_code": "timeout"}),
            selectors.RUN_KEYSET,
            RUN,
            "run_agent_error",
        ),
        (
            selectors.run_query(
                agent=agent, filters={"created_after": T0, "created_before": datetime.now(UTC)}
            ),
            selectors.RUN_KEYSET,
            RUN,
            "run_agent_created",
        ),
    ]
    for query, keyset, shape, index in cases:
        queryset = query.queryset()
        # Half a conversation's runs: the deep page is not estimated empty, where two indexes
        # cost the same and a sample of the table decided between them.
        first = paginate(queryset, keyset=keyset, page=page_request({"limit": "50"}))
        edge = (getattr(first.rows[-1], keyset.field), first.rows[-1].id)
        deep = queryset.order_by(*keyset.order_by).filter(keyset.after(*edge))[:101]
        compiled = compiled_list(query.model, shape, keyset)
        values = [condition.value for condition in query.where]
        plans = [qs.explain() for qs in (queryset.order_by(*keyset.order_by)[:101], deep)]
        with connection.cursor() as cursor:
            for after, params in (
                (False, [*values, 101]),
                (True, [*values, *edge[:1], *edge, 101]),
            ):
                cursor.execute("EXPLAIN " + compiled.sql(query.where, after=after), params)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
        for plan in plans:
            assert (
                f"Index Scan using {index}" in plan or f"Index Scan Backward using {index}" in plan
            ), plan
            assert "Sort" not in plan, plan
