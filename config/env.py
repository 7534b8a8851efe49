"""Strict readers for settings that come from the environment.

A typo in production configuration should stop the process at start-up with a message that
names the variable, not silently fall back to a default.
"""

import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name} must be one of 1/0, true/false, yes/no, on/off; got {raw!r}"
    )


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer; got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}; got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_float_list(name: str, default: list[str], *, minimum: float = 0.0) -> tuple[float, ...]:
    """A comma-separated list of numbers, e.g. "5,300,1800"."""
    values = []
    for item in env_list(name, default):
        try:
            value = float(item)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} must be numbers separated by commas; got {item!r}"
            ) from None
        if not value >= minimum or value == float("inf"):  # also refuses nan
            raise ImproperlyConfigured(f"{name} values must be at least {minimum}; got {item!r}")
        values.append(value)
    return tuple(values)


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (compared lower-cased; "" allowed only when it is a choice)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in choices:
        shown = ", ".join(repr(choice) for choice in choices)
        raise ImproperlyConfigured(f"{name} must be one of {shown}; got {raw!r}")
    return value
