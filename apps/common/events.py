"""One in-process announcement channel, shared by every app's `events.py`.

An app that announces something (activity's recorded runs, usage's reached thresholds) keeps
one `Announcement` per kind of event; whoever cares registers a listener in its
`AppConfig.ready()`. The announcing app imports none of its listeners, so the dependency
between apps stays one-way (docs/architecture.md).
"""

from collections.abc import Callable
from typing import Generic, TypeVar

Event = TypeVar("Event")


class Announcement(Generic[Event]):
    def __init__(self) -> None:
        self._listeners: list[Callable[[Event], None]] = []

    def listen(self, listener: Callable[[Event], None]) -> Callable[[Event], None]:
        """Register `listener` (usable as a decorator); registering it twice keeps one."""
        if listener not in self._listeners:
            self._listeners.append(listener)
        return listener

    def announce(self, event: Event) -> None:
        for listener in self._listeners:
            listener(event)
