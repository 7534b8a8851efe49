"""The user filter of Runs and Conversations in Chromium (issue 26, item 3): Enter in the name
box filters the list, the address bar never shows /users/suggest/..., reloading the address
gives the same list, and after Back the filter controls match the table."""

import pytest
from playwright.sync_api import expect

from tests.activity.factories import conversation_factory, end_user_factory, run_factory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def people(agent):
    ada = end_user_factory(agent=agent, display_name="Ada Lovelace", email="ada@example.com")
    alan = end_user_factory(agent=agent, display_name="Alan Turing", email="alan@example.com")
    for user, model in ((ada, "model-ada"), (alan, "model-alan")):
        conversation = conversation_factory(agent=agent, user=user, title=f"Talk of {model}")
        run_factory(conversation=conversation, model_id=model, status="completed")
        run_factory(conversation=conversation, model_id=model, status="failed")
    return ada, alan


def _table_models(page, table: str) -> set[str]:
    text = page.locator(table).inner_text()
    return {model for model in ("model-ada", "model-alan") if model in text}


@pytest.mark.parametrize(
    ("path", "table"),
    [("/runs/", "#run-table"), ("/conversations/", "#conversation-table")],
)
def test_enter_in_the_name_box_filters_and_the_address_survives_a_reload(
    console_page, people, path, table
):
    page = console_page
    page.goto(f"{page.live_server_url}{path}")
    box = page.locator("input[name=user_id]")
    box.click()
    # Typed quickly, Enter before the suggestions' delay ran out: the old race.
    box.press_sequentially("lovelace", delay=20)
    box.press("Enter")
    page.locator("#picked-user").wait_for()
    page.wait_for_timeout(600)  # past the suggestions' delay: nothing may move the address
    page.wait_for_load_state("networkidle")

    assert "/users/suggest/" not in page.url
    assert page.url.startswith(f"{page.live_server_url}{path}?")
    assert "user_id=lovelace" in page.url
    if table == "#run-table":
        assert _table_models(page, table) == {"model-ada"}
    else:
        assert "Talk of model-ada" in page.locator(table).inner_text()
        assert "Talk of model-alan" not in page.locator(table).inner_text()

    page.reload()
    assert page.locator("#picked-user").inner_text() == "Ada Lovelace"
    assert page.locator("input[name=user_id]").input_value() == "lovelace"


def test_after_back_the_controls_match_the_table(console_page, people):
    page = console_page
    page.goto(f"{page.live_server_url}/runs/")
    assert _table_models(page, "#run-table") == {"model-ada", "model-alan"}

    page.select_option("select[name=status]", "failed")
    page.wait_for_url("**/runs/?*status=failed*")
    box = page.locator("input[name=user_id]")
    box.fill("turing")
    box.press("Enter")
    page.wait_for_url("**user_id=turing*")
    page.locator("#picked-user").wait_for()
    assert _table_models(page, "#run-table") == {"model-alan"}

    page.go_back()
    page.wait_for_url("**/runs/?*status=failed*")
    page.wait_for_load_state("networkidle")
    expect(page.locator("select[name=status]")).to_have_value("failed")
    expect(page.locator("input[name=user_id]")).to_have_value("")
    assert page.locator("#picked-user").count() == 0
    assert _table_models(page, "#run-table") == {"model-ada", "model-alan"}
    assert "completed" not in page.locator("#run-table tbody").inner_text().lower()

    page.go_back()
    page.wait_for_url(f"{page.live_server_url}/runs/")
    page.wait_for_load_state("networkidle")
    expect(page.locator("select[name=status]")).to_have_value("")
    expect(page.locator("#run-table tbody")).to_contain_text("completed", ignore_case=True)

    page.go_forward()
    page.wait_for_url("**/runs/?*status=failed*")
    page.wait_for_load_state("networkidle")
    expect(page.locator("select[name=status]")).to_have_value("failed")
