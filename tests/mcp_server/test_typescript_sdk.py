"""The official MCP TypeScript SDK's OAuth client (`@modelcontextprotocol/sdk`, pinned in
tests/mcp_server/node/package-lock.json) through the whole flow against a live server, beside
the Python SDK's (test_oauth_flow.py): the scope it asks for comes from our 401 challenge, the
member consents with what the page pre-ticks, the tools answer, and a spoiled access token is
refreshed. `make test` installs the package (scripts/install_node_packages.sh)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from apps.mcp_server.oauth import TOOL_SCOPES
from tests.activity.factories import conversation_factory, run_factory
from tests.mcp_server.oauth_client import Member

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]

NODE_DIR = Path(__file__).parent / "node"


def _read(process: subprocess.Popen) -> dict:
    line = process.stdout.readline()
    if not line:
        process.wait(10)
        raise AssertionError(f"node ended: {process.stderr.read()}")
    return json.loads(line)


def test_the_typescript_sdk_connects_with_oauth_calls_tools_and_refreshes(
    live_server, owner, agent
):
    node = shutil.which("node")
    assert node, "Node.js is needed (scripts/install_os_packages.sh installs it)"
    assert (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(), (
        "run scripts/install_node_packages.sh (make test does)"
    )
    run = run_factory(agent=agent, conversation=conversation_factory(agent=agent))
    member = Member(
        base_url=live_server.url,
        email=owner.email,
        password=owner.raw_password,
        agent_id=agent.pk,
        scopes=None,  # what the consent page pre-ticks
    )
    process = subprocess.Popen(
        [node, "oauth_flow.mjs", live_server.url],
        cwd=NODE_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        asked = _read(process)
        assert "authorize" in asked, asked
        member.consent(asked["authorize"])
        query = "&".join(f"{name}={value}" for name, value in member.callback.items())
        process.stdin.write(f"http://localhost:53682/callback?{query}\n")
        process.stdin.flush()
        result = _read(process)["result"]
        assert process.wait(30) == 0, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()

    assert "iss" in member.callback  # RFC 9207, which the SDK may check
    # The SDK names the server it connects to (RFC 8707), and the page shows it to the member.
    assert f"<code>{live_server.url}/mcp</code>" in member.consent_pages[0]
    assert result["protocolVersion"] == "2025-11-25"
    tools = {tool["name"]: tool for tool in result["tools"]}
    assert len(tools) == 8
    assert all(tool["annotations"]["readOnlyHint"] for tool in tools.values())
    # It asked for what the challenge named, and the page pre-ticked exactly that.
    granted = sorted(scope for scope in result["grantedScope"].split() if ":" in scope)
    assert [scope for scope in granted if not scope.startswith("agent:")] == TOOL_SCOPES
    assert f"agent:{agent.pk}" in granted
    for answer in (result["runs"], result["afterRefresh"]):
        assert not answer.get("isError"), answer
        assert [row["id"] for row in answer["structuredContent"]["data"]] == [run.id]
    assert result["refreshed"] is True
