"""Filters on a run's JSON arrays (tools called, documents retrieved) work on both databases.

Django has no `contains` on SQLite, the embedded default `make run` uses: the runs list filtered
by tool and a knowledge document's page (which counts the runs that retrieved it) failed there
with a 500. Marked smoke, so `make test` runs it on SQLite as well as PostgreSQL.
"""

import pytest

from apps.activity.models import Run
from apps.activity.selectors import document_run_counts
from tests.activity.factories import run_factory

pytestmark = [pytest.mark.smoke, pytest.mark.django_db]


@pytest.fixture
def runs(agent):
    return {
        "both": run_factory(agent=agent, tool_names=["search", "lookup"], document_ids=["doc_a"]),
        "search": run_factory(agent=agent, tool_names=["search"], document_ids=["doc_b"]),
        "none": run_factory(agent=agent),
    }


def test_contains_finds_arrays_holding_every_item(agent, runs):
    def found(**lookup) -> set[str]:
        return set(Run.objects.filter(agent=agent, **lookup).values_list("id", flat=True))

    assert found(tool_names__contains=["search"]) == {runs["both"].id, runs["search"].id}
    assert found(tool_names__contains=["search", "lookup"]) == {runs["both"].id}
    assert found(tool_names__contains=["sea"]) == set()  # an element, not a substring
    assert found(document_ids__contains=["doc_a"]) == {runs["both"].id}


def test_a_documents_run_counts_and_the_runs_list_filter(agent, runs, make_api):
    assert document_run_counts(agent=agent, document_id="doc_a", days=(7, 30)) == {7: 1, 30: 1}
    client = make_api(["runs:read"])
    listed = client.get("/v1/runs?tool_name=lookup")
    assert listed.status == 200
    assert [run["id"] for run in listed.json()["data"]] == [runs["both"].id]
