"""A decoded span (apps.activity.otlp's `SpanData`) mapped onto activity, no database access:
`step_fields` makes it a step of a run with the GenAI semantic conventions (`gen_ai.*`) and the
Vercel AI SDK's telemetry (`ai.*`), keeping the attributes it does not map; `run_dimensions`,
`error_code` and `sdk_version` read a run's facts off its spans.
"""

import functools
import re
from typing import Any

import orjson
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from apps.activity import dimensions
from apps.activity.otlp import SpanData, json_cleaned, nanos_datetime

_AGENT_NAMES = ("ai.streamText", "ai.generateText", "ai.streamObject", "ai.generateObject")
_MODEL_NAMES = tuple(f"{name}.do{verb}" for name in _AGENT_NAMES for verb in ("Stream", "Generate"))
_MODEL_OPERATIONS = ("chat", "text_completion", "generate_content", "embeddings")


def span_kind(span: SpanData) -> str:
    attributes = span["attributes"]
    operation = attributes.get("gen_ai.operation.name")
    name = span["name"]
    if operation == "execute_tool" or name == "ai.toolCall":
        return "tool"
    if operation in _MODEL_OPERATIONS or name in _MODEL_NAMES or name.startswith("ai.embed"):
        return "model"
    if operation in ("invoke_agent", "create_agent") or name in _AGENT_NAMES:
        return "agent"
    if operation == "retrieval" or "gen_ai.retrieval.query.text" in attributes:
        return "retrieval"
    return "custom"


def _json_or_text(value: Any) -> Any:
    """AI SDK and GenAI attributes carry JSON as strings; keep text that is not JSON as is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(json_cleaned(value))
        except orjson.JSONDecodeError:
            return value
    return value


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, float) and value >= 0 and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


_MODEL_ID = ("gen_ai.response.model", "gen_ai.request.model", "ai.response.model", "ai.model.id")
_INPUT = ("gen_ai.input.messages", "ai.prompt.messages", "ai.prompt")
_OUTPUT = ("gen_ai.output.messages", "ai.response.text", "ai.response.object")
_TOOL_CALLS = ("ai.response.toolCalls",)
_FINISH = ("gen_ai.response.finish_reasons", "ai.response.finishReason")
_TOKENS = (
    ("input_tokens", ("gen_ai.usage.input_tokens", "ai.usage.inputTokens",
                      "gen_ai.usage.prompt_tokens", "ai.usage.promptTokens")),
    ("output_tokens", ("gen_ai.usage.output_tokens", "ai.usage.outputTokens",
                       "gen_ai.usage.completion_tokens", "ai.usage.completionTokens")),
    ("total_tokens", ("gen_ai.usage.total_tokens", "ai.usage.totalTokens")),
    ("cache_read_tokens", ("gen_ai.usage.cache_read.input_tokens",
                           "gen_ai.usage.cache_read_input_tokens", "ai.usage.cachedInputTokens")),
    ("cache_write_tokens", ("gen_ai.usage.cache_creation.input_tokens",
                            "gen_ai.usage.cache_creation_input_tokens")),
)  # fmt: skip
_FIRST_CHUNK = ("ai.response.msToFirstChunk", "gen_ai.response.time_to_first_chunk")
_CREDITS = ("credits_charged",)
_TOOL_NAME = ("gen_ai.tool.name", "ai.toolCall.name")
_MCP_SERVER = ("mcp.server.name", "gen_ai.tool.mcp_server")
_TOOL_ARGUMENTS = ("gen_ai.tool.call.arguments", "ai.toolCall.args")
_TOOL_RESULT = ("gen_ai.tool.call.result", "ai.toolCall.result")
_QUERY = ("gen_ai.retrieval.query.text", "db.query.text")
_DOCUMENTS = ("gen_ai.retrieval.documents",)
# The attribute groups each kind of step reads, in order; in each group the first attribute
# with a value is the one read, and then every attribute of the group counts as mapped.
_GROUPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "model": (_MODEL_ID, _INPUT, _OUTPUT, _TOOL_CALLS, _FINISH,
              *(names for _field, names in _TOKENS), _FIRST_CHUNK, _CREDITS),
    "agent": (_MODEL_ID, _INPUT, _OUTPUT, _TOOL_CALLS, _FINISH),
    "tool": (_TOOL_NAME, _MCP_SERVER, _TOOL_ARGUMENTS, _TOOL_RESULT),
    "retrieval": (_QUERY, _DOCUMENTS),
    "custom": (),
}  # fmt: skip
_ALWAYS_MAPPED = {
    kind: ("gen_ai.tool.call.id", "ai.toolCall.id", "gen_ai.operation.name")
    if kind == "tool" else ("gen_ai.operation.name",)
    for kind in _GROUPS
}  # fmt: skip
_PLANS: dict[tuple, tuple[tuple[str | None, ...], frozenset[str]]] = {}
_MAX_PLANS = 4096


def _plan(kind: str, attributes: dict) -> tuple[tuple[str | None, ...], frozenset[str]]:
    """(per group of the kind, the attribute read or None; every attribute mapped), which only
    depend on the kind and on which attributes have a value: made once per such shape, not
    once per span (a batch's spans come in a handful of shapes)."""
    key = (kind, *[name for name, value in attributes.items() if value is not None])
    plan = _PLANS.get(key)
    if plan is None:
        present = set(key[1:])
        chosen = tuple(
            next((name for name in names if name in present), None) for names in _GROUPS[kind]
        )
        used = set(_ALWAYS_MAPPED[kind])
        for names, name in zip(_GROUPS[kind], chosen, strict=True):
            if name is not None:
                used.update(names)
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        plan = _PLANS[key] = (chosen, frozenset(used))
    return plan


@functools.cache
def _metadata_names(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((name, f"ai.telemetry.metadata.{name}") for name in names)


def metadata(span: SpanData, *names: str) -> str | None:
    """A telemetry metadata value (`ai.telemetry.metadata.<name>`) or attribute, as text."""
    attributes = span["attributes"]
    for name, telemetry_name in _metadata_names(names):
        value = attributes.get(name)
        if value is None:
            value = attributes.get(telemetry_name)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value)[:255]
    return None


def step_fields(span: SpanData) -> dict[str, Any]:
    """The step record of one span (apps.activity.services.step_record's fields)."""
    attributes = span["attributes"]  # read only
    kind = span_kind(span)
    chosen, used = _plan(kind, attributes)
    started = nanos_datetime(int(span["start"]))
    end = span["end"]
    ended = None if end is None else nanos_datetime(int(end))
    failed = span["status"] == Status.STATUS_CODE_ERROR
    fields: dict[str, Any] = {
        "id": span["span_id"],
        "parent_id": span["parent_span_id"],
        "trace_id": span["trace_id"],
        "kind": kind,
        "name": span["name"],
        "status": "failed" if failed else ("completed" if ended else "running"),
        "started_at": started,
        "ended_at": ended,
    }
    if failed:
        error = None
        for event in span["events"]:
            if event["name"] == "exception":
                error = event["attributes"].get("exception.message") or event["attributes"].get(
                    "exception.type"
                )
        fields["error"] = str(span["status_message"] or (str(error) if error else "error"))
    values = [None if name is None else attributes[name] for name in chosen]
    if kind in ("model", "agent"):
        model_id, prompt, output, tool_calls, finish = values[:5]
        if model_id is not None:
            fields["model_id"] = str(model_id)[:255]
        fields["input"] = _json_or_text(prompt)
        if output is None and tool_calls is not None:
            output = tool_calls
        fields["output"] = _json_or_text(output)
        if isinstance(finish, list):
            finish = finish[0] if finish else None
        fields["finish_reason"] = str(finish)[:64] if finish is not None else None
        if kind == "model":
            for (field, _names), value in zip(_TOKENS, values[5:10], strict=True):
                fields[field] = _int(value)
            if fields["total_tokens"] is None and fields["input_tokens"] is not None:
                fields["total_tokens"] = fields["input_tokens"] + (fields["output_tokens"] or 0)
            fields["first_token_ms"] = _number(values[10])
            fields["credits_charged"] = _number(values[11])
    elif kind == "tool":
        name, server, arguments, result = values
        fields["tool_name"] = str(name)[:255] if name is not None else None
        fields["mcp_server"] = str(server)[:255] if server is not None else None
        fields["input"] = _json_or_text(arguments)
        fields["output"] = _json_or_text(result)
    elif kind == "retrieval":
        query, documents = values
        fields["query"] = str(query) if query is not None else None
        documents = _json_or_text(documents)
        if isinstance(documents, list):
            fields["documents"] = [_document(item) for item in documents[:100]]
    kept = {key: value for key, value in attributes.items() if key not in used}
    if span["events"]:
        kept["otel.events"] = span["events"][:20]
    service = span["resource"].get("service.name")
    if service:
        kept["service.name"] = service
    fields["attributes"] = kept
    return {key: value for key, value in fields.items() if value is not None or key in (
        "parent_id", "ended_at")}  # fmt: skip


def _document(item: Any) -> dict:
    if not isinstance(item, dict):
        return {"passage": str(item)}
    score = _number(item.get("score"))
    return {
        "document_id": _text(item.get("id") or item.get("document_id")),
        "title": _text(item.get("title")),
        "url": _text(item.get("url")),
        "passage": _text(item.get("content") or item.get("passage") or item.get("text")),
        "score": score,
    }


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None


def messages_of(span: SpanData) -> tuple[str | None, str | None]:
    """(the last user text the agent span was asked, the text it answered), when it says."""
    attributes = span["attributes"]
    prompt = _json_or_text(
        attributes.get("gen_ai.input.messages")
        or attributes.get("ai.prompt")
        or attributes.get("ai.prompt.messages")
    )
    question = None
    if isinstance(prompt, dict):
        if isinstance(prompt.get("prompt"), str):
            question = prompt["prompt"]
        prompt = prompt.get("messages", [])
    if isinstance(prompt, list):
        for message in prompt:
            if isinstance(message, dict) and message.get("role") == "user":
                question = _message_text(message) or question
    answer = attributes.get("ai.response.text")
    output = _json_or_text(attributes.get("gen_ai.output.messages"))
    if answer is None and isinstance(output, list):
        texts = [_message_text(message) for message in output if isinstance(message, dict)]
        answer = "\n".join(text for text in texts if text) or None
    return question, answer if isinstance(answer, str) else None


def _message_text(message: dict) -> str | None:
    content = message.get("content", message.get("parts"))
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part.get("text") or part.get("content")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return "\n".join(text for text in texts if isinstance(text, str)) or None
    return None


# --- A run's dimensions, error code and SDK (docs/activity-recording.md, "Dimensions") -------

_METADATA_PREFIX = "ai.telemetry.metadata."
# Telemetry metadata already mapped to a field of its own (the run's conversation and user, its
# tags, environment and release): not repeated in the run's metadata.
_METADATA_MAPPED = frozenset({"conversationId", "conversation_id", "chatId", "userId", "user_id",
                              "tags", "environment", "release"})  # fmt: skip
_AI_SDK_AGENT = re.compile(r"(?:^|\s)ai/([0-9][0-9A-Za-z.+-]*)")


def _resource_text(span: SpanData, *names: str) -> str | None:
    for name in names:
        value = span["resource"].get(name)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def run_dimensions(spans: list[SpanData]) -> dict[str, Any]:
    """The run fields `environment`, `release`, `tags` and `metadata` that `spans` (the root
    first, then the spans that speak for the run) say, each left out when none does:

    - environment: the resource's `deployment.environment.name` (or the older
      `deployment.environment`), else telemetry metadata `environment`;
    - release: the resource's `service.version`, else telemetry metadata `release`;
    - tags: telemetry metadata `tags` (an array of strings, or one string);
    - metadata: every other scalar `ai.telemetry.metadata.<key>` (the AI SDK's
      `experimental_telemetry.metadata`; any SDK may set them), the first span saying a key wins.
    Values past the limits of apps.activity.dimensions are shortened or left out."""
    fields: dict[str, Any] = {}
    environment = release = None
    tags: list[Any] | None = None
    metadata: dict[str, Any] = {}
    for span in spans:
        environment = environment or _resource_text(
            span, "deployment.environment.name", "deployment.environment"
        )
        release = release or _resource_text(span, "service.version")
        for name, value in span["attributes"].items():
            if not name.startswith(_METADATA_PREFIX) or value is None:
                continue
            key = name[len(_METADATA_PREFIX) :]
            if key == "tags":
                if tags is None:
                    tags = value if isinstance(value, list) else [value]
            elif key == "environment" and isinstance(value, str):
                environment = environment or value.strip() or None
            elif key == "release" and isinstance(value, str | int) and not isinstance(value, bool):
                release = release or str(value).strip() or None
            elif key not in _METADATA_MAPPED and key not in metadata:
                metadata[key] = value
    if environment:
        fields["environment"] = environment[: dimensions.ENVIRONMENT_MAX]
    if release:
        fields["release"] = release[: dimensions.RELEASE_MAX]
    if tags is not None:
        fields["tags"] = dimensions.tags_lenient(tags)
    if metadata:
        fields["metadata"] = dimensions.metadata_lenient(metadata)
    return fields


def error_code(span: SpanData) -> str:
    """A failed span's error code: the type of the exception it recorded (`exception.type`),
    else its `error.type` attribute, else its status code's name (`ERROR`). The message is
    the step's `error`, never the code."""
    code = None
    for event in span["events"]:
        if event["name"] == "exception":
            code = event["attributes"].get("exception.type") or code
    if not code:
        code = span["attributes"].get("error.type")
    if not isinstance(code, str | int) or isinstance(code, bool) or not str(code).strip():
        code = Status.StatusCode.Name(span["status"]).removeprefix("STATUS_CODE_")
    return str(code).strip()[:255]


def sdk_version(spans: list[SpanData]) -> str | None:
    """`ai <version>` for a trace of the Vercel AI SDK, whose spans carry the package's version
    in the user agent they send (`ai.request.headers.user-agent`: `ai/6.0.1`); else None."""
    for span in spans:
        agent = span["attributes"].get("ai.request.headers.user-agent")
        if isinstance(agent, str):
            match = _AI_SDK_AGENT.search(agent)
            if match:
                return f"ai {match.group(1)}"[:64]
    return None
