"""Message parts (AI SDK UIMessage parts) to what the transcript template draws.

Parts are attacker-controlled: text goes through the sanitizing markdown filter in the
template, JSON is pretty-printed and escaped by the template, and a link is kept only when
its URL is http(s) — a `javascript:` or `data:` URL is shown as plain text, never as a link.
"""

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
        }
    return {"kind": "json", "json": pretty_json(part), "label": kind or "part"}


def message_view(message) -> dict:
    parts = message.parts if isinstance(message.parts, list) else [message.parts]
    return {"message": message, "parts": [part_view(part) for part in parts]}
