"""The whole MCP authorization flow against a live server, with the official SDK's client:
discovery (RFC 9728, RFC 8414), dynamic registration (RFC 7591), authorization code with PKCE
after a signed-in owner consents, the exchange, tool calls, a missing permission, the /v1
refusal of the raw OAuth token, and revocation from the console ending every token at once."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from oauth2_provider.models import AccessToken, Application

from apps.mcp_server.models import ConnectedApplication
from apps.workspaces.models import ApiKey
from tests.activity.factories import conversation_factory, message_factory, run_factory
from tests.knowledge.conftest import make_file_document
from tests.mcp_server.conftest import off_the_event_loop
from tests.mcp_server.oauth_client import Member, MemoryStorage, oauth_provider, with_mcp_client

pytestmark = pytest.mark.django_db(transaction=True)

HANDBOOK = b"# Handbook\n\n## Refunds\n\nRefunds are paid back within fourteen days.\n"


@pytest.fixture
def agent_data(agent):
    conversation = conversation_factory(agent=agent)
    message_factory(conversation=conversation)
    run = run_factory(agent=agent, conversation=conversation)
    document = make_file_document(agent, HANDBOOK, "handbook.md")
    return {"conversation": conversation, "run": run, "document": document}


def _text(result) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def test_desktop_client_connects_calls_tools_and_is_cut_off_by_revocation(
    live_server, owner, agent, agent_data, owner_client
):
    base = live_server.url
    member = Member(
        base_url=base,
        email=owner.email,
        password=owner.raw_password,
        agent_id=agent.pk,
        # No runs:read: a tool that needs it must say so.
        scopes=["knowledge:read", "conversations:read", "usage:read"],
    )
    storage = MemoryStorage()

    async def session(client):
        tools = await client.list_tools()
        search = await client.call_tool("search_knowledge", {"query": "refund", "mode": "keyword"})
        document = await client.call_tool(
            "read_document", {"document_id": agent_data["document"].pk}
        )
        conversation = await client.call_tool(
            "read_conversation", {"conversation_id": agent_data["conversation"].id}
        )
        runs = await client.call_tool("list_runs", {})
        return tools, search, document, conversation, runs

    tools, search, document, conversation, runs = off_the_event_loop(
        lambda: asyncio.run(with_mcp_client(base, oauth_provider(base, member, storage), session))
    )

    # The consent page showed the client's name and the Agent; the client registered itself.
    assert "Desktop test client" in member.consent_pages[0]
    assert agent.name in member.consent_pages[0]
    application = Application.objects.get(name="Desktop test client")
    assert application.client_type == "public"

    names = {tool.name for tool in tools.tools}
    assert {"search_knowledge", "read_document", "list_conversations", "read_conversation"} <= names
    assert {"list_runs", "read_run", "list_documents", "usage"} <= names

    assert not search.is_error, _text(search)
    hits = search.structured_content["data"]
    assert hits and hits[0]["document_id"] == agent_data["document"].pk
    assert "fourteen days" in document.structured_content["content"]
    assert conversation.structured_content["conversation"]["id"] == agent_data["conversation"].id
    assert len(conversation.structured_content["messages"]["data"]) == 1

    # A tool whose operation needs a permission that was not granted: an error naming it.
    assert runs.is_error
    assert "runs:read" in _text(runs) and "insufficient_scope" in _text(runs)

    # The grant: one connected application, its grant key with exactly the chosen permissions.
    connection = ConnectedApplication.objects.get(agent=agent, revoked_at__isnull=True)
    assert connection.user == owner
    assert connection.grant_key.kind == ApiKey.Kind.CONNECTED_APP
    assert sorted(connection.grant_key.scopes) == [
        "conversations:read",
        "knowledge:read",
        "usage:read",
    ]
    assert connection.last_used_at is not None

    # The OAuth access token itself is refused by the REST API (contract 5.1.2).
    access_token = storage.tokens.access_token
    assert access_token.startswith("oat_")
    v1 = httpx.get(
        f"{base}/v1/connection", headers={"Authorization": f"Bearer {access_token}"}, timeout=10
    )
    assert v1.status_code == 401
    assert v1.json()["name"] == "unauthorized"
    assert "/mcp" in v1.json()["message"]

    # It still works on /mcp, until the owner disconnects the application in the console.
    async def list_only(client):
        return await client.list_tools()

    assert off_the_event_loop(
        lambda: asyncio.run(with_mcp_client(base, oauth_provider(base, member, storage), list_only))
    )

    answer = owner_client.post(f"/connected-apps/{connection.pk}/revoke/", follow=True)
    assert "Disconnected “Desktop test client”" in answer.content.decode()
    # (The client's RFC 7592 registration token, which has no user, is not a grant.)
    assert not AccessToken.objects.filter(application=application, user=owner).exists()
    connection.refresh_from_db()
    assert connection.revoked_at is not None
    connection.grant_key.refresh_from_db()
    assert connection.grant_key.revoked_at is not None

    refused = httpx.post(
        f"{base}/mcp",
        headers={
            "Authorization": f"Bearer {access_token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        timeout=10,
    )
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert "/.well-known/oauth-protected-resource/mcp" in refused.headers["www-authenticate"]
