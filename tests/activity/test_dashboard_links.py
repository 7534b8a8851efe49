"""From the Overview to the runs it counts (issue 26, "Dashboards are look-only"): every day of a
chart, every model, tool and failing tool, and every top user links to the Runs list narrowed
to exactly those runs, keeping the Agent, the filters and the period; and what each end user
costs, on the Users list, a user's page and the Overview."""

import re
from datetime import UTC, date, datetime, timedelta
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.activity import selectors
from apps.activity.models import Run
from tests.activity.factories import conversation_factory, end_user_factory, run_factory
from tests.conftest import console_client

pytestmark = pytest.mark.django_db

TODAY = date(2026, 3, 14)


@pytest.fixture(autouse=True)
def _now(time_machine):
    time_machine.move_to(datetime(2026, 3, 14, 18, 0, tzinfo=UTC), tick=False)


def _at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


@pytest.fixture
def spread(agent):
    alice = end_user_factory(agent=agent, display_name="Alice")
    bob = end_user_factory(agent=agent, display_name="Bob")
    talk_a = conversation_factory(agent=agent, user=alice)
    talk_b = conversation_factory(agent=agent, user=bob)
    runs = {
        "a1": run_factory(conversation=talk_a, created_at=_at(date(2026, 3, 10)), model_id="big",
                          tool_names=["search"], credits_charged=2.0, total_tokens=100),
        "a2": run_factory(conversation=talk_a, created_at=_at(date(2026, 3, 12)), model_id="big",
                          credits_charged=3.0, total_tokens=200),
        "b1": run_factory(conversation=talk_b, created_at=_at(date(2026, 3, 12), 9),
                          model_id="small", status="failed", tool_names=["search", "fetch"],
                          failed_tool_names=["fetch"], credits_charged=0.5, total_tokens=50),
        # Before the 7-day period: counted in all-time totals, not in the Overview's.
        "old": run_factory(conversation=talk_b, created_at=_at(date(2026, 2, 1)),
                           model_id="small", credits_charged=10.0, total_tokens=1000),
    }  # fmt: skip
    return {"alice": alice, "bob": bob, **runs}


def _runs_listed(client, url: str) -> set[str]:
    html = client.get(url).content.decode()
    return set(re.findall(r'href="/runs/(run[^/"]+)/"', html))


def _links(html: str, section: str) -> list[str]:
    part = html.split(section, 1)[1].split("</section>", 1)[0]
    return [unescape(href) for href in re.findall(r'href="(/runs/\?[^"]+)"', part)]


def test_a_day_of_a_chart_opens_that_days_runs_with_the_agent_and_filters(
    owner_client, agent, spread
):
    html = owner_client.get("/overview/?days=7&model_id=big").content.decode()
    runs_chart = html.split("Runs per day by status", 1)[1]
    day_link = unescape(
        re.search(r'<a class="mark" href="([^"]+)"[^>]*aria-label="2026-03-12:', runs_chart)[1]
    )
    assert f"agent={agent.pk}" in day_link and "model_id=big" in day_link
    assert "from=2026-03-12" in day_link and "to=2026-03-12" in day_link
    # big on the 12th: a2 only (b1 is small, a1 another day).
    assert _runs_listed(owner_client, day_link) == {spread["a2"].id}
    # The mark says its values; the data table behind the chart has the same link.
    assert 'aria-label="2026-03-12: 1 runs (1 completed)"' in html
    assert f'<a href="{day_link.replace("&", "&amp;")}">2026-03-12</a>' in html


def test_models_tools_and_failing_tools_open_their_runs_in_the_period(owner_client, spread):
    html = owner_client.get("/overview/?days=7").content.decode()
    model_links = _links(html, 'id="credits-by-model"')
    by_model = {re.search(r"model_id=(\w+)", link)[1]: link for link in model_links}
    assert _runs_listed(owner_client, by_model["big"]) == {spread["a1"].id, spread["a2"].id}
    # The period is kept: the small model's run of February is not among them.
    assert _runs_listed(owner_client, by_model["small"]) == {spread["b1"].id}
    failing = _links(html, "<h2>Failing tools</h2>")
    assert len(failing) == 1 and "failed_tool=fetch" in failing[0]
    assert _runs_listed(owner_client, failing[0]) == {spread["b1"].id}
    top = {
        re.search(r"tool_name=(\w+)", link)[1]: link for link in _links(html, "<h2>Top tools</h2>")
    }
    assert _runs_listed(owner_client, top["search"]) == {spread["a1"].id, spread["b1"].id}


def test_a_link_naming_another_agent_of_the_user_opens_that_agent(owner, agent, sibling_agent):
    theirs = run_factory(agent=sibling_agent, created_at=_at(date(2026, 3, 12)))
    client = console_client(owner, agent)
    assert _runs_listed(client, f"/runs/?agent={sibling_agent.pk}") == {theirs.id}


def test_a_link_naming_an_agent_the_user_may_not_open_is_ignored(owner, agent, other_agent, spread):
    run_factory(agent=other_agent, created_at=_at(date(2026, 3, 12)))
    client = console_client(owner, agent)
    listed = _runs_listed(client, f"/runs/?agent={other_agent.pk}")
    assert listed == {run.id for run in Run.objects.filter(agent=agent)}


def test_the_overview_ranks_users_by_credits_in_the_period(owner_client, agent, spread):
    html = owner_client.get("/overview/?days=7").content.decode()
    section = html.split('id="credits-by-user"', 1)[1].split("</section>", 1)[0]
    assert section.index("Alice") < section.index("Bob")  # 5.0 credits before 0.5
    assert ">5.00<" in section and ">0.50<" in section  # Bob's February run is outside
    alice_runs = [
        link for link in _links(html, 'id="credits-by-user"') if spread["alice"].id in link
    ]
    assert _runs_listed(owner_client, alice_runs[0]) == {spread["a1"].id, spread["a2"].id}


def test_user_usage_sums_each_users_runs(agent, spread):
    alice, bob = spread["alice"], spread["bob"]
    nobody = end_user_factory(agent=agent)
    usage = selectors.user_usage(agent=agent, user_ids=[alice.id, bob.id, nobody.id])
    assert usage[alice.id] == selectors.UserUsage(runs=2, tokens=300, credits=5.0)
    assert usage[bob.id] == selectors.UserUsage(runs=2, tokens=1050, credits=10.5)
    assert usage[nobody.id] == selectors.UserUsage()
    since = timezone.now() - timedelta(days=30)
    assert selectors.user_usage(agent=agent, user_ids=[bob.id], since=since)[bob.id].runs == 1


def test_user_usage_never_counts_another_agents_runs(agent, other_agent, spread):
    alice = spread["alice"]
    # The same user id under another Agent (ids are per Agent), with runs of its own.
    namesake = end_user_factory(agent=other_agent, id=alice.id)
    talk = conversation_factory(agent=other_agent, user=namesake)
    run_factory(conversation=talk, created_at=_at(date(2026, 3, 12)), credits_charged=99.0)
    assert selectors.user_usage(agent=agent, user_ids=[alice.id])[alice.id].credits == 5.0


def test_the_users_list_shows_each_users_cost_in_one_query(owner_client, agent, spread):
    html = owner_client.get("/users/").content.decode()
    assert '<td data-label="Credits" class="num">10.5</td>' in html
    assert '<td data-label="Credits" class="num">5</td>' in html
    for n in range(10):
        talk = conversation_factory(agent=agent, user=end_user_factory(agent=agent))
        run_factory(conversation=talk, created_at=_at(date(2026, 3, 13), n))
    with CaptureQueriesContext(connection) as captured:
        owner_client.get("/users/")
    usage_queries = [q["sql"] for q in captured.captured_queries if "SUM(" in q["sql"].upper()]
    assert len(usage_queries) == 1  # one grouped query for the page, however many users


def test_a_users_page_shows_recent_and_all_time_usage(owner_client, agent, spread):
    bob = spread["bob"]
    html = owner_client.get(f"/users/{bob.id}/").content.decode()
    recent = html.split('id="user-usage-recent"', 1)[1].split("</tr>", 1)[0]
    every = html.split('id="user-usage-all"', 1)[1].split("</tr>", 1)[0]
    assert ">1</a>" in recent and ">0.5<" in recent
    assert ">2</a>" in every and ">1,050<" in every and ">10.5<" in every
    assert f"/overview/?user_id={bob.id}&amp;days=30" in html
