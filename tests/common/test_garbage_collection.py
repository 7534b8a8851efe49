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


def _frozen(value) -> bool:
    """Whether `value` is in the permanent generation: tracked, but in none of the three the
    collector walks. (The freeze count cannot tell: frozen objects that die leave it.)"""
    return gc.is_tracked(value) and not any(tracked is value for tracked in gc.get_objects())


def test_a_worker_freezes_at_load_and_after_its_first_requests(unfrozen):
    kept: list[dict] = []

    def app(environ, start_response):
        kept.append({"cache": []})  # what a request builds and keeps
        start_response("200 OK", [])
        return [b"ok"]

    loaded_before = {"module": []}
    application = freeze_after_warm_up(app)
    assert _frozen(loaded_before)

    def serve(until: int) -> None:
        while len(kept) < until:
            assert application({}, lambda *args: None) == [b"ok"]

    first, last = FREEZE_AFTER_REQUESTS
    serve(first - 1)
    assert not _frozen(kept[0])
    serve(first)
    assert _frozen(kept[0]) and _frozen(kept[first - 2])
    serve(last - 1)
    assert not _frozen(kept[first])
    serve(last)
    assert _frozen(kept[first]) and _frozen(kept[last - 2])
    serve(last + 10)
    assert not _frozen(kept[-1])  # nothing more is frozen once warm


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
