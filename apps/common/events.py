"""One in-process announcement channel, and one way to ask, shared by every app's `events.py`.

An app that announces something (activity's recorded runs, usage's reached thresholds) keeps
one `Announcement` per kind of event; whoever cares registers a listener in its
`AppConfig.ready()`. An app that needs an answer only a higher app knows (how many runs used a
document) keeps a `Question`; the app that knows registers its provider the same way. Neither
the announcing nor the asking app imports the other, so the dependency between apps stays
one-way (docs/architecture.md).
"""

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

Event = TypeVar("Event")
Args = ParamSpec("Args")
Answer = TypeVar("Answer")


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


class Question(Generic[Args, Answer]):
    """A question with one answerer: the first provider registered answers; `ask` is None
    when no app provides the answer (the asker then works it out itself, or knows nothing)."""

    def __init__(self) -> None:
        self._providers: list[Callable[Args, Answer]] = []

    def provide(self, provider: Callable[Args, Answer]) -> Callable[Args, Answer]:
        """Register `provider` (usable as a decorator); registering it twice keeps one."""
        if provider not in self._providers:
            self._providers.append(provider)
        return provider

    def ask(self, *args: Args.args, **kwargs: Args.kwargs) -> Answer | None:
        for provider in self._providers:
            return provider(*args, **kwargs)
        return None
