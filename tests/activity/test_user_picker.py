"""The user filter of the runs and conversations pages takes a name, email or id; users are
shown by name."""

import pytest
from django.urls import reverse

from tests.activity.factories import conversation_factory, end_user_factory, run_factory

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def people(agent):
    ada = end_user_factory(agent=agent, display_name="Ada Lovelace", email="ada@example.com")
    alan = end_user_factory(agent=agent, display_name="Alan Turing", email="alan@example.com")
    for user, model in ((ada, "model-ada"), (alan, "model-alan")):
        run_factory(conversation=conversation_factory(agent=agent, user=user), model_id=model)
    return ada, alan


def test_runs_filter_by_a_users_name_shows_only_their_runs_and_their_name(signed_in, people):
    ada, _alan = people
    html = signed_in.get(reverse("activity:run_list"), {"user_id": "lovelace"}).content.decode()
    table = html.split('id="run-table"', 1)[1]
    assert "model-ada" in table and "model-alan" not in table
    assert 'id="picked-user">Ada Lovelace<' in html
    assert ">Ada Lovelace</a>" in table  # names, not ids, in the rows


def test_an_exact_id_or_email_picks_the_user_too(signed_in, people):
    ada, _alan = people
    for text in (ada.id, "ada@example.com"):
        html = signed_in.get(reverse("activity:conversation_list"), {"user_id": text}).content
        assert b'id="picked-user">Ada Lovelace<' in html


def test_a_name_that_matches_several_or_none_asks_to_choose(signed_in, people):
    several = signed_in.get(reverse("activity:run_list"), {"user_id": "example.com"})
    assert "Several users match “example.com”; pick one" in several.content.decode()
    none = signed_in.get(reverse("activity:run_list"), {"user_id": "grace"})
    assert "No user matches “grace”." in none.content.decode()


def test_suggestions_are_ids_labelled_with_names_of_this_agent_only(signed_in, people, other_agent):
    end_user_factory(agent=other_agent, display_name="Ada Other")
    html = signed_in.get(
        reverse("activity:user_suggest"), {"user_id": "ada"}, headers={"HX-Request": "true"}
    ).content.decode()
    ada, _alan = people
    assert html.startswith('<datalist id="user-choices">')
    assert f'<option value="{ada.id}">Ada Lovelace · ada@example.com</option>' in html
    assert "Ada Other" not in html


def test_run_page_names_its_user(signed_in, people):
    ada, _alan = people
    run = ada.runs.get()
    html = signed_in.get(reverse("activity:run_detail", args=[run.id])).content.decode()
    assert f'href="/users/{ada.id}/">Ada Lovelace</a>' in html


def test_the_suggestions_address_opened_as_a_page_is_the_users_list_searched(signed_in, people):
    """Reloading (or pasting) /users/suggest/?user_id=... used to give a bare datalist."""
    response = signed_in.get(reverse("activity:user_suggest"), {"user_id": "ada love"})
    assert response.status_code == 302
    assert response["Location"] == "/users/?q=ada+love"
    assert b"Ada Lovelace" in signed_in.get(response["Location"]).content


def test_the_user_box_never_pushes_its_suggestions_address(signed_in, people):
    for name in ("activity:run_list", "activity:conversation_list", "activity:overview"):
        html = signed_in.get(reverse(name)).content.decode()
        box = html.split('name="user_id"', 1)[1].split(">", 1)[0]
        assert 'hx-push-url="false"' in box and 'hx-sync="closest form:abort"' in box


@pytest.mark.parametrize("name", ["activity:run_list", "activity:conversation_list"])
def test_an_inverted_date_range_says_so_instead_of_showing_nothing(signed_in, people, name):
    """Issue 26, item 5: an inverted date range silently gave an empty list."""
    html = signed_in.get(reverse(name), {"from": "2026-03-10", "to": "2026-03-01"}).content
    assert b"From is after To: no row can match." in html
    one_day = signed_in.get(reverse(name), {"from": "2026-03-01", "to": "2026-03-01"}).content
    assert b"From is after To" not in one_day  # `to` includes its day
