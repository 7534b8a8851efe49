"""Message parts (AI SDK UIMessage parts) to what the transcript template draws.

Parts are attacker-controlled: text goes through the sanitizing markdown filter in the
template, JSON is pretty-printed and escaped by the template, and a link is kept only when
its URL is http(s) — a `javascript:` or `data:` URL is shown as plain text, never as a link.
"""

from bisect import bisect_left
from urllib.parse import urlsplit

import orjson


def safe_url(value) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        scheme = urlsplit(value.strip()).scheme.lower()
    except ValueError:
        return None
    return value.strip() if scheme in ("http", "https") else None


def initials_of(name: str) -> str:
    """Up to two letters for an avatar that loads nothing from elsewhere ("Ada Lovelace" → AL)."""
    words = [
        word for word in name.replace("@", " ").replace(".", " ").split() if word[:1].isalnum()
    ]
    letters = "".join(word[0] for word in words[:2]).upper()
    return letters or "?"


def pretty_json(value) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return repr(value)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def part_view(part) -> dict:
    """{"kind": ..., ...} for one part; unknown or malformed parts become "json"."""
    if not isinstance(part, dict):
        return {"kind": "json", "json": pretty_json(part), "label": "part"}
    kind = part.get("type")
    kind = kind if isinstance(kind, str) else ""
    if kind == "text":
        return {"kind": "text", "text": _text(part.get("text"))}
    if kind == "reasoning":
        return {"kind": "reasoning", "text": _text(part.get("text"))}
    if kind == "step-start":
        return {"kind": "step"}
    if kind.startswith("tool-") or kind == "dynamic-tool":
        name = part.get("toolName") if kind == "dynamic-tool" else kind[len("tool-") :]
        state = _text(part.get("state"))
        return {
            "kind": "tool",
            "name": _text(name) or "tool",
            "call_id": _text(part.get("toolCallId")),
            "state": state,
            "failed": state == "output-error" or bool(part.get("errorText")),
            "input": pretty_json(part.get("input")) if "input" in part else None,
            "output": pretty_json(part.get("output")) if "output" in part else None,
            "error": _text(part.get("errorText")),
        }
    if kind == "file":
        return {
            "kind": "file",
            "url": safe_url(part.get("url")),
            "raw_url": _text(part.get("url"))[:200],
            "filename": _text(part.get("filename")) or "file",
            "media_type": _text(part.get("mediaType")),
        }
    if kind in ("source-url", "source-document"):
        return {
            "kind": "source",
            "url": safe_url(part.get("url")),
            "raw_url": _text(part.get("url"))[:200],
            "title": _text(part.get("title"))
            or _text(part.get("filename"))
            or _text(part.get("url")),
            "media_type": _text(part.get("mediaType")),
            # Set by the page when the id names one of the Agent's knowledge documents.
            "source_id": _text(part.get("sourceId"))[:64],
            "document_id": None,
        }
    return {"kind": "json", "json": pretty_json(part), "label": kind or "part"}


def message_view(message) -> dict:
    parts = message.parts if isinstance(message.parts, list) else [message.parts]
    return {"message": message, "parts": [part_view(part) for part in parts]}


def runs_by_turn(messages: list, runs: list) -> dict[str, list]:
    """Message id -> the runs that produced it, in the order they ran.

    A run has no message id; it produced the turn's answer, so it belongs to the first assistant
    message recorded at or after it started. A run with no answer after it (still streaming, or
    failed before replying) stays with the last message before it, so it is never dropped.
    """
    ordered = sorted(messages, key=lambda message: (message.created_at, message.id))
    answers = [message for message in ordered if message.role == "assistant"]
    answer_times = [message.created_at for message in answers]
    turns: dict[str, list] = {}
    for run in sorted(runs, key=lambda run: (run.created_at, run.id)):
        index = bisect_left(answer_times, run.created_at)
        if index < len(answers):
            owner = answers[index]
        else:
            earlier = [message for message in ordered if message.created_at <= run.created_at]
            if not earlier:
                continue  # a run older than every message shown: the runs panel still lists it
            owner = earlier[-1]
        turns.setdefault(owner.id, []).append(run)
    return turns


def turn_usage(runs: list) -> dict:
    """Tokens, credits and latency of one turn's runs, for the line under the message."""

    def total(name: str) -> float | None:
        values = [getattr(run, name) for run in runs if getattr(run, name) is not None]
        return sum(values) if values else None

    return {
        "runs": runs,
        "tokens": total("total_tokens"),
        "credits": total("credits_charged"),
        "latency_ms": total("total_turn_latency_ms"),
    }
