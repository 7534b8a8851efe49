"""The WSGI application freezes what a worker holds at load and after its first requests, and
still collects the garbage cycles that requests make afterwards."""

import gc
import weakref

import pytest

from apps.common.garbage_collection import FREEZE_AFTER_REQUESTS, freeze_after_warm_up


@pytest.fixture
def unfrozen():
    """Whatever a test freezes goes back to the collector's generations afterwards."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_worker_freezes_at_load_and_after_its_first_requests(unfrozen):
    kept = []

    def app(environ, start_response):
        kept.append({"cache": [object() for _ in range(10)]})  # what requests keep
        start_response("200 OK", [])
        return [b"ok"]

    application = freeze_after_warm_up(app)
    at_load = gc.get_freeze_count()
    assert at_load > 0

    counts = []
    for _ in range(FREEZE_AFTER_REQUESTS[-1]):
        assert application({}, lambda *args: None) == [b"ok"]
        counts.append(gc.get_freeze_count())
    first, last = FREEZE_AFTER_REQUESTS[0], FREEZE_AFTER_REQUESTS[-1]
    # Frozen again right at those requests, and only then.
    assert counts[first - 2] == at_load and counts[first - 1] > at_load
    assert counts[last - 2] == counts[first - 1] and counts[last - 1] > counts[first - 1]
    assert len(set(counts)) == len(FREEZE_AFTER_REQUESTS) + 1


def test_garbage_is_not_frozen_and_later_cycles_are_still_collected(unfrozen):
    made = []

    def app(environ, start_response):
        made.append(weakref.ref(_Cycle()))  # unreachable at once, but for its own cycle
        start_response("200 OK", [])
        return [b"ok"]

    application = freeze_after_warm_up(app)
    for _ in range(FREEZE_AFTER_REQUESTS[-1] + 50):
        application({}, lambda *args: None)
    gc.collect()
    assert all(ref() is None for ref in made)
