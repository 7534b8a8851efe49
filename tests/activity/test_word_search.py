"""Word search over what was said (issue 36, item 3): `?q=` on /v1/conversations and /v1/runs,
ranked, and /v1/search/messages and /v1/search/steps with highlighted snippets, in several
languages and scripts, never across Agents; recorded through the real recording service."""

import pytest

from tests.activity.test_rendering import CONVERSATION_FIELDS, RUN_FIELDS
from tests.activity.test_services_recording import record

pytestmark = pytest.mark.django_db

T = "2025-02-01T10:00:{:02}Z"
TEXTS = {
    # Many refunds in few words: the best match for "refund".
    "conv_refunds": "Refund, refund, refund: I want my refund now.",
    "conv_jacket": "Where is the blue jacket I ordered two weeks ago? The shop said it would "
    "arrive on Monday, and after that I may ask for a refund if it never comes.",
    "conv_ru": "Где мой заказ? Я жду посылку уже две недели.",
    "conv_zh": "我想查询东京都的订单状态",
    "conv_ar": "أين طلبي؟ لم يصل بعد",
    "conv_xss": "<script>alert('refund')</script> please",
}


def _conversation(conversation_id: str, text: str, n: int, *, role: str = "user") -> list[dict]:
    return [
        {"type": "conversation", "id": conversation_id, "title": f"About {n}",
         "status": "completed" if n % 2 else "streaming", "created_at": T.format(n)},
        {"type": "message", "id": f"msg_{conversation_id}", "conversation_id": conversation_id,
         "role": role, "parts": [{"type": "text", "text": text}], "created_at": T.format(n)},
    ]  # fmt: skip


@pytest.fixture
def said(agent, other_agent):
    records: list[dict] = []
    for n, (conversation_id, text) in enumerate(TEXTS.items()):
        records += _conversation(conversation_id, text, n)
    records += [
        {"type": "run", "id": "run_ship", "conversation_id": "conv_jacket", "request_id": "r1",
         "sdk_version": "5.0.0", "created_at": T.format(20)},
        {"type": "run", "id": "run_other", "conversation_id": "conv_ru", "request_id": "r2",
         "sdk_version": "5.0.0", "created_at": T.format(21)},
        {"type": "step", "id": "st_lookup", "run_id": "run_ship", "kind": "tool",
         "name": "lookup_order", "input": {"order": "A-42", "note": "blue jacket"},
         "output": {"status": "shipped to Lisbon", "carrier": "CTT"}},
        {"type": "step", "id": "st_chat", "run_id": "run_other", "kind": "model", "name": "chat",
         "output": "Ваш заказ отправлен в Лиссабон"},
    ]  # fmt: skip
    record(agent, *records)
    record(
        other_agent,
        *[
            *_conversation("conv_secret", "refund secret of another Agent", 1),
            {"type": "run", "id": "run_secret", "conversation_id": "conv_secret",
             "request_id": "r3", "sdk_version": "5.0.0", "created_at": T.format(2)},
            {"type": "step", "id": "st_secret", "run_id": "run_secret", "kind": "tool",
             "name": "lookup_order", "output": {"status": "shipped to Lisbon"}},
        ],
    )  # fmt: skip


def _ids(api, path: str) -> list[str]:
    response = api.get(path)
    assert response.status == 200, response.json()
    return [item["id"] for item in response.json()["data"]]


@pytest.mark.smoke
def test_conversations_are_found_by_their_words_ranked_and_never_another_agents(api, said):
    body = api.get("/v1/conversations?q=refund").json()
    ids = [item["id"] for item in body["data"]]
    assert ids[0] == "conv_refunds"
    assert set(ids) == {"conv_refunds", "conv_jacket", "conv_xss"}
    assert all(set(item) == CONVERSATION_FIELDS for item in body["data"])
    assert (body["has_more"], body["next_cursor"]) == (False, None)
    # Every word must match: the jacket and a refund are in one message only.
    assert _ids(api, "/v1/conversations?q=jacket%20refund") == ["conv_jacket"]
    assert _ids(api, "/v1/conversations?q=secret") == []
    assert _ids(api, "/v1/conversations?q=nowhere-to-be-found") == []
    matches = api.get("/v1/search/messages?q=refund").json()["data"]
    assert "conv_secret" not in {match["conversation_id"] for match in matches}


def test_words_are_stemmed_and_phrases_and_exclusions_apply(api, said):
    found = _ids(api, "/v1/conversations?q=refunds")
    assert found[0] == "conv_refunds"
    assert set(found) == {"conv_refunds", "conv_jacket", "conv_xss"}
    assert _ids(api, "/v1/conversations?q=%22blue%20jacket%22") == ["conv_jacket"]
    assert _ids(api, "/v1/conversations?q=%22jacket%20blue%22") == []
    assert _ids(api, "/v1/conversations?q=refund%20-jacket") == ["conv_refunds", "conv_xss"]
    # Stop words are not required: "the" is in no English message's index.
    assert _ids(api, "/v1/conversations?q=the%20jacket") == ["conv_jacket"]


def test_russian_chinese_and_arabic_messages_are_found(api, said):
    assert _ids(api, "/v1/conversations?q=%D0%B7%D0%B0%D0%BA%D0%B0%D0%B7%D0%B0") == ["conv_ru"]
    assert _ids(api, "/v1/conversations?q=东京") == ["conv_zh"]
    assert _ids(api, "/v1/conversations?q=订单状态") == ["conv_zh"]
    assert _ids(api, "/v1/conversations?q=京东") == []  # the characters, not side by side
    assert _ids(api, "/v1/conversations?q=طلبي") == ["conv_ar"]
    match = api.get("/v1/search/messages?q=东京").json()["data"][0]
    assert "<mark>东京</mark>" in match["snippet"]


def test_message_matches_carry_a_highlighted_escaped_snippet(api, said):
    body = api.get("/v1/search/messages?q=refund").json()
    assert set(body) == {"object", "data", "has_more", "next_cursor"}
    first = body["data"][0]
    assert set(first) == {
        "object", "conversation_id", "message_id", "role", "snippet", "rank", "created_at",
    }  # fmt: skip
    assert first["object"] == "message_match"
    assert (first["conversation_id"], first["message_id"]) == ("conv_refunds", "msg_conv_refunds")
    assert first["role"] == "user"
    assert first["snippet"].count("<mark>") == 4
    assert "<mark>Refund</mark>" in first["snippet"]
    ranks = [match["rank"] for match in body["data"]]
    assert ranks == sorted(ranks, reverse=True)
    hostile = next(m for m in body["data"] if m["conversation_id"] == "conv_xss")
    assert "<script>" not in hostile["snippet"]
    assert "&lt;script&gt;" in hostile["snippet"]
    assert "<mark>refund" in hostile["snippet"]


def test_runs_are_found_by_step_inputs_and_outputs(api, said):
    body = api.get("/v1/runs?q=lisbon").json()
    assert [run["id"] for run in body["data"]] == ["run_ship"]
    assert set(body["data"][0]) == RUN_FIELDS
    assert _ids(api, "/v1/runs?q=A-42") == ["run_ship"]
    # Russian stemming: Лиссабон in a model step's output.
    assert _ids(api, "/v1/runs?q=%D0%9B%D0%B8%D1%81%D1%81%D0%B0%D0%B1%D0%BE%D0%BD") == ["run_other"]
    steps = api.get("/v1/search/steps?q=lisbon").json()["data"]
    assert [(step["run_id"], step["step_id"]) for step in steps] == [("run_ship", "st_lookup")]
    assert set(steps[0]) == {
        "object", "run_id", "step_id", "name", "kind", "snippet", "rank", "started_at",
    }  # fmt: skip
    assert (steps[0]["object"], steps[0]["name"], steps[0]["kind"]) == (
        "step_match", "lookup_order", "tool",
    )  # fmt: skip
    assert "<mark>Lisbon</mark>" in steps[0]["snippet"]


def test_search_combines_with_the_lists_filters(api, said):
    # conv_refunds (n=0) is streaming, conv_jacket (1) and conv_xss (5) completed.
    found = _ids(api, "/v1/conversations?q=refund&status=completed")
    assert sorted(found) == ["conv_jacket", "conv_xss"]
    assert _ids(api, "/v1/runs?q=lisbon&status=failed") == []


def test_ranked_pages_walk_with_cursors_and_refuse_tampered_ones(api, said):
    seen, after = [], None
    for _ in range(5):
        path = "/v1/conversations?q=refund&limit=1" + (f"&after={after}" if after else "")
        body = api.get(path).json()
        seen += [item["id"] for item in body["data"]]
        after = body["next_cursor"]
        if not body["has_more"]:
            assert after is None
            break
    assert seen == _ids(api, "/v1/conversations?q=refund")
    assert api.get(f"/v1/conversations?q=refund&after={after or 'x'}1").status == 400
    first = api.get("/v1/search/messages?q=refund&limit=1").json()
    assert first["has_more"] is True
    second = api.get(f"/v1/search/messages?q=refund&limit=1&after={first['next_cursor']}")
    assert second.json()["data"][0]["message_id"] != first["data"][0]["message_id"]
    # A cursor of one ranked list is refused by another.
    assert api.get(f"/v1/search/steps?q=refund&after={first['next_cursor']}").status == 400


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/v1/conversations?q=", "q must not be empty"),
        ("/v1/conversations?q=%20%20", "q must not be empty"),
        ("/v1/runs?q=" + "x" * 201, "q is too long"),
        ("/v1/runs?q=-refund", "q has no word to search for"),
        ("/v1/conversations?q=%21%3F", "q has no word to search for"),
        ("/v1/conversations?q=a%00b", "q must not contain NUL"),
        ("/v1/search/messages", "q is required"),
        ("/v1/search/steps?q=", "q must not be empty"),
        ("/v1/search/messages?q=refund&status=completed", "Unknown query parameter: status"),
    ],
)
def test_malformed_searches_are_400_naming_q(api, said, path, words):
    response = api.get(path)
    assert response.status == 400
    assert response.json()["name"] == "bad_request"
    assert words in response.json()["message"]


def test_search_needs_the_lists_scopes(make_api, said):
    runs_only = make_api(scopes=["runs:read"])
    assert runs_only.get("/v1/search/messages?q=refund").status == 403
    assert runs_only.get("/v1/search/steps?q=lisbon").status == 200
    conversations_only = make_api(scopes=["conversations:read"])
    assert conversations_only.get("/v1/search/steps?q=lisbon").status == 403


def test_words_of_an_updated_message_replace_its_old_ones(api, agent, said):
    record(
        agent,
        *[{"type": "message", "id": "msg_conv_jacket", "conversation_id": "conv_jacket",
                  "parts": [{"type": "text", "text": "The umbrella arrived."}]}],
    )  # fmt: skip
    assert _ids(api, "/v1/conversations?q=jacket") == []
    assert _ids(api, "/v1/conversations?q=umbrella") == ["conv_jacket"]


def test_openapi_documents_q_and_the_match_objects(api):
    document = api.get("/v1/openapi.json").json()
    paths = document["paths"]
    for path in ("/v1/conversations", "/v1/runs", "/v1/search/messages", "/v1/search/steps"):
        names = {parameter["name"] for parameter in paths[path]["get"]["parameters"]}
        assert {"q", "limit", "after"} <= names, path
    schemas = document["components"]["schemas"]
    assert set(schemas["MessageMatchOut"]["properties"]) == {
        "object", "conversation_id", "message_id", "role", "snippet", "rank", "created_at",
    }  # fmt: skip
    assert set(schemas["StepMatchOut"]["properties"]) == {
        "object", "run_id", "step_id", "name", "kind", "snippet", "rank", "started_at",
    }  # fmt: skip
