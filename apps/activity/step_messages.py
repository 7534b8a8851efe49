"""A step's input or output that holds chat messages, read as a transcript (role, text, tool
calls and their results) for the run page, beside the JSON tree.

Runtimes send messages in several shapes; each is read here, and anything else is not a
transcript (the page shows the JSON tree alone):
- the AI SDK's prompt (`{"system", "prompt" | "messages": [...]}`) and its model messages
  (`content` a string, or parts: `text`, `reasoning`, `tool-call`, `tool-result`, `image`, `file`);
- the AI SDK's UI messages (`parts`: `text`, `tool-<name>` / `dynamic-tool` with input and output);
- OpenTelemetry GenAI messages (`parts`: `text` with `content`, `tool_call`, `tool_call_response`);
- OpenAI chat messages (`content`, `tool_calls[].function`, a `tool` role's answer).
Every value came from the runtime: the template escapes all of it.
"""

from typing import Any

import orjson

ROLES = ("system", "user", "assistant", "tool", "developer")
MAX_MESSAGES = 200
TEXT_MAX = 4000  # characters of one text or argument shown


def _short(text: str) -> str:
    return text if len(text) <= TEXT_MAX else text[:TEXT_MAX] + "…"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return _short(value)
    try:
        return _short(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())
    except TypeError:
        return _short(str(value))


def _part(part: Any) -> dict | None:
    """One part as {kind: text | reasoning | call | result | media, name, text}."""
    if isinstance(part, str):
        return {"kind": "text", "name": "", "text": _short(part)}
    if not isinstance(part, dict):
        return None
    kind = str(part.get("type", ""))
    name = str(part.get("toolName") or part.get("name") or "")
    if kind in ("text", "reasoning"):
        text = part.get("text", part.get("content"))
        return {"kind": kind, "name": "", "text": _as_text(text)} if text is not None else None
    if kind in ("tool-call", "tool_call"):
        arguments = part.get("input", part.get("args", part.get("arguments")))
        return {"kind": "call", "name": name, "text": _as_text(arguments)}
    if kind in ("tool-result", "tool_call_response"):
        result = part.get("output", part.get("result", part.get("response")))
        return {"kind": "result", "name": name, "text": _as_text(result)}
    if kind.startswith("tool-") or kind == "dynamic-tool":  # a UI message's tool part
        name = name or kind.removeprefix("tool-")
        call = {"kind": "call", "name": name, "text": _as_text(part.get("input"))}
        return call if part.get("output") is None else {**call, "result": _as_text(part["output"])}
    if kind in ("image", "file", "blob", "uri"):
        label = part.get("mediaType") or part.get("mimeType") or part.get("mime_type") or kind
        return {"kind": "media", "name": "", "text": str(label)}
    return None


def _message(message: dict) -> dict:
    role = str(message.get("role"))
    content = message.get("content", message.get("parts"))
    parts: list[dict] = []
    if isinstance(content, str):
        parts.append({"kind": "text", "name": "", "text": _short(content)})
    elif isinstance(content, list):
        parts += [part for part in map(_part, content) if part is not None]
    for call in message.get("tool_calls") or []:  # OpenAI
        function = call.get("function", {}) if isinstance(call, dict) else {}
        if isinstance(function, dict):
            arguments = _as_text(function.get("arguments"))
            parts.append({"kind": "call", "name": str(function.get("name", "")), "text": arguments})
    if role == "tool" and isinstance(content, str):  # OpenAI: the answer to a call
        parts = [
            {"kind": "result", "name": str(message.get("name") or ""), "text": parts[0]["text"]}
        ]
    return {"role": role if role in ROLES else "other", "label": role, "parts": parts}


def _is_message(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("role"), str)
        and any(key in item for key in ("content", "parts", "tool_calls"))
    )


def step_messages(value: Any) -> list[dict] | None:
    """The messages `value` holds, in order, or None when it is not a list of chat messages."""
    prefix: list[dict] = []
    if isinstance(value, dict) and not _is_message(value):
        if isinstance(value.get("system"), str):
            prefix.append({"role": "system", "content": value["system"]})
        if isinstance(value.get("prompt"), str):
            prefix.append({"role": "user", "content": value["prompt"]})
        value = value.get("messages", [] if prefix else None)
    elif _is_message(value):
        value = [value]
    if not isinstance(value, list) or not all(_is_message(item) for item in value):
        return None
    messages = [*prefix, *value]
    if not messages:
        return None
    return [_message(message) for message in messages[:MAX_MESSAGES]]
