"""The Agents MCP server: the Agent's data as MCP tools, on the official SDK's `MCPServer`.

Every tool is one /v1 operation called in process with the request's resource token
(apps.mcp_server.rest), so it needs exactly the permission of that operation. A call without
it is a tool error naming the permission; any other refusal carries the API's own message.
"""

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from apps.common import metrics
from apps.mcp_server.rest import RestResult, v1_call


@dataclass(frozen=True)
class McpCall:
    """What the tools of one /mcp request act with."""

    resource_token: str
    agent_id: str
    outer_meta: dict


current_call: ContextVar[McpCall] = ContextVar("mcp_current_call")


class CountedMCPServer(MCPServer):
    """Counts every tool call by tool and outcome (the metric mcp_tool_calls)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        tool = name if self._tool_manager.get_tool(name) is not None else "unknown"
        try:
            result = await super().call_tool(name, arguments, context)
        except Exception:
            metrics.MCP_TOOL_CALLS.labels(tool, "error").inc()
            raise
        outcome = "error" if getattr(result, "is_error", False) else "ok"
        metrics.MCP_TOOL_CALLS.labels(tool, outcome).inc()
        return result


mcp = CountedMCPServer(
    # Nothing is pushed to clients (stateless HTTP), so no long-lived subscriptions/listen.
    subscriptions=False,
    name="agent-console",
    title="Agent console",
    instructions=(
        "Tools over one Agent's data in the Agent console: its knowledge (search and read "
        "documents), its conversations with their messages, its runs, and its usage. Each tool "
        "needs the permission named in its description, granted when the application was "
        "connected."
    ),
)


async def _call(
    scope: str,
    method: str,
    path: str,
    *,
    query: dict[str, Any] | None = None,
    body: dict | None = None,
) -> Any:
    call = current_call.get()
    # thread_sensitive: the ORM work runs in the /mcp request's own thread and connection.
    result: RestResult = await sync_to_async(v1_call, thread_sensitive=True)(
        outer_meta=call.outer_meta,
        token=call.resource_token,
        method=method,
        path=path,
        query=query,
        body=body,
    )
    if result.ok:
        return result.body
    body = result.body if isinstance(result.body, dict) else {}
    if body.get("name") == "insufficient_scope" and f"'{scope}'" in str(body.get("message")):
        raise ToolError(
            f"insufficient_scope: this tool needs the '{scope}' permission, which this "
            "application was not granted. Connect it again and grant that permission."
        )
    raise ToolError(result.error_message)


# Every tool only reads the Agent's data, inside this service (MCP tool annotations).
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def _page(limit: int, after: str | None) -> dict[str, Any]:
    return {"limit": limit, "after": after}


@mcp.tool(
    annotations=READ_ONLY,
    description="Search the Agent's knowledge by meaning and keywords: passages with their full "
    "text, heading path and document name, each with a relevance score in [0, 1]. An empty "
    "list means the knowledge does not answer the question; lower min_score (0 to 1, default "
    "the calibrated threshold) to see weaker matches. Give run_id (the run this search "
    "serves) to record the search as that run's retrieval step, as the run page shows it. "
    "Needs knowledge:read.",
)
async def search_knowledge(
    query: str,
    mode: Literal["hybrid", "keyword", "semantic"] = "hybrid",
    limit: int = 10,
    min_score: float | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"query": query, "mode": mode, "limit": limit}
    if min_score is not None:
        body["min_score"] = min_score
    if run_id is not None:
        # POST /v1/knowledge/search announces it; activity records the retrieval step.
        body["run_id"] = run_id
    return await _call("knowledge:read", "POST", "knowledge/search", body=body)


@mcp.tool(
    annotations=READ_ONLY,
    description="List the Agent's knowledge documents, newest first. Needs knowledge:read.",
)
async def list_documents(limit: int = 20, after: str | None = None) -> dict[str, Any]:
    return await _call("knowledge:read", "GET", "knowledge", query=_page(limit, after))


@mcp.tool(
    annotations=READ_ONLY,
    description="Read a knowledge document: its details and its extracted markdown. "
    "Needs knowledge:read.",
)
async def read_document(document_id: str) -> dict[str, Any]:
    document = await _call("knowledge:read", "GET", f"knowledge/{document_id}")
    content = await _call("knowledge:read", "GET", f"knowledge/{document_id}/content")
    return {"document": document, "content": content}


@mcp.tool(
    annotations=READ_ONLY,
    description="List the Agent's conversations, most recently updated first; filter by "
    "user_id or status. Needs conversations:read.",
)
async def list_conversations(
    limit: int = 20,
    after: str | None = None,
    user_id: str | None = None,
    status: str | None = None,
) -> dict[str, Any]:
    query = {**_page(limit, after), "user_id": user_id, "status": status}
    return await _call("conversations:read", "GET", "conversations", query=query)


@mcp.tool(
    annotations=READ_ONLY,
    description="Read one conversation and its messages (oldest first, up to `limit`). "
    "Needs conversations:read.",
)
async def read_conversation(conversation_id: str, limit: int = 100) -> dict[str, Any]:
    conversation = await _call("conversations:read", "GET", f"conversations/{conversation_id}")
    messages = await _call(
        "conversations:read",
        "GET",
        f"conversations/{conversation_id}/messages",
        query={"limit": limit},
    )
    return {"conversation": conversation, "messages": messages}


@mcp.tool(
    annotations=READ_ONLY,
    description="List the Agent's model runs, newest first; filter by conversation_id, "
    "user_id, status, model_id or error_code. Needs runs:read.",
)
async def list_runs(
    limit: int = 20,
    after: str | None = None,
    conversation_id: str | None = None,
    user_id: str | None = None,
    status: str | None = None,
    model_id: str | None = None,
    error_code: str | None = None,
) -> dict[str, Any]:
    query = {
        **_page(limit, after),
        "conversation_id": conversation_id,
        "user_id": user_id,
        "status": status,
        "model_id": model_id,
        "error_code": error_code,
    }
    return await _call("runs:read", "GET", "runs", query=query)


@mcp.tool(
    annotations=READ_ONLY,
    description="Read one model run: status, tokens, credits, latency, tools. Needs runs:read.",
)
async def read_run(run_id: str) -> dict[str, Any]:
    return await _call("runs:read", "GET", f"runs/{run_id}")


@mcp.tool(
    annotations=READ_ONLY,
    description="The Agent's usage and credits over a period (`from`/`to` as YYYY-MM-DD, "
    "default this month). Needs usage:read.",
)
async def usage(from_date: str | None = None, to_date: str | None = None) -> dict[str, Any]:
    agent_id = current_call.get().agent_id
    query = {"from": from_date, "to": to_date}
    return await _call("usage:read", "GET", f"agents/{agent_id}/usage", query=query)
