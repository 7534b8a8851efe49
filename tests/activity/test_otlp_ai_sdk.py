"""The Vercel AI SDK (`ai` on npm, run with Node) with its mock language model, a tool and
`experimental_telemetry`, exported by `@opentelemetry/exporter-trace-otlp-http`: the run, its
steps, the tool's input and output and the conversation appear through /v1.

The Node packages are pinned in tests/activity/node/package-lock.json and installed by
scripts/install_node_packages.sh (`make test`)."""

import contextlib
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest

from apps.activity.models import EndUser, Message, PendingSpan

NODE_DIR = Path(__file__).parent / "node"
NODE = shutil.which("node")

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]


def warm_up(base_url: str) -> None:
    """The live server's first request imports every URL module (seconds on a busy machine);
    take that cost before an exporter with a timeout is waiting."""
    # A 401 without a key: the server answered, which is all that is wanted.
    with contextlib.suppress(urllib.error.HTTPError):
        urllib.request.urlopen(f"{base_url}/v1/connection", timeout=120)


def run_ai_sdk(
    *,
    base_url: str,
    raw_key: str,
    conversation_id: str,
    resource: dict | None = None,
    metadata: dict | None = None,
    call: str = "streamText",
) -> dict:
    if NODE is None or not (NODE_DIR / "node_modules" / "ai").exists():
        pytest.fail("Node and tests/activity/node/node_modules are needed: run `make test` "
                    "(scripts/install_node_packages.sh)")  # fmt: skip
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"{base_url}/v1/otlp",
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {raw_key}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "CONVERSATION_ID": conversation_id,
        "RESOURCE_ATTRIBUTES": orjson.dumps(resource or {}).decode(),
        "EXTRA_METADATA": orjson.dumps(metadata or {}).decode(),
        "AI_CALL": call,
        # A loaded 2-core machine: the exporter's 10 s default is too short to be sure.
        "OTEL_EXPORTER_OTLP_TIMEOUT": "60000",
    }
    warm_up(base_url)
    completed = subprocess.run(
        [NODE, "ai_sdk_telemetry.mjs"], cwd=NODE_DIR, env=env, capture_output=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    return orjson.loads(completed.stdout.decode().strip().splitlines()[-1])


def test_the_ai_sdk_records_its_run_steps_and_tool_call(live_server, make_api):
    writer = make_api(scopes=["activity:write"])
    reader = make_api(scopes=["runs:read", "conversations:read"])

    output = run_ai_sdk(base_url=live_server.url, raw_key=writer.raw_key, conversation_id="chat-7")
    assert output["text"] == "Order 1042 has shipped."

    runs = reader.get("/v1/runs").json()["data"]
    assert len(runs) == 1
    run = runs[0]
    assert run["conversation_id"] == "chat-7"
    assert run["status"] == "completed"
    assert run["model_id"] == "mock-model-1"
    assert (run["input_tokens"], run["output_tokens"], run["total_tokens"]) == (130, 17, 147)
    assert run["tool_names"] == ["lookupOrder"]
    assert run["user_id"] == EndUser.objects.get(external_id="customer-7").id

    steps = reader.get(f"/v1/runs/{run['id']}/steps").json()["data"]
    by_name = {}
    for step in steps:
        by_name.setdefault(step["name"], []).append(step)
    root = by_name["ai.streamText"][0]
    assert root["kind"] == "agent" and root["parent_id"] is None
    model_calls = by_name["ai.streamText.doStream"]
    assert [step["kind"] for step in model_calls] == ["model", "model"]
    assert [step["finish_reason"] for step in model_calls] == ["tool-calls", "stop"]
    assert all(step["parent_id"] == root["id"] for step in model_calls)
    (tool_call,) = by_name["ai.toolCall"]
    assert tool_call["kind"] == "tool" and tool_call["tool_name"] == "lookupOrder"
    assert tool_call["input"] == {"order": 1042}
    assert tool_call["output"] == {"order": 1042, "state": "shipped"}
    assert root["attributes"]["ai.telemetry.functionId"] == "support-chat"

    messages = reader.get("/v1/conversations/chat-7/messages").json()["data"]
    assert [(m["role"], m["parts"][0]["text"]) for m in messages] == [
        ("user", "Where is order 1042?"),
        ("assistant", "Order 1042 has shipped."),
    ]
    assert Message.objects.get(role="assistant").run_id == run["id"]
    assert not PendingSpan.objects.exists()


def test_the_ai_sdk_run_carries_its_version_environment_release_tags_and_metadata(
    live_server, make_api
):
    """Resource attributes and `experimental_telemetry.metadata` arrive as the run's attributes
    and filter the lists; the SDK version is the `ai` package's (docs/activity-recording.md,
    "Dimensions")."""
    writer = make_api(scopes=["activity:write"])
    reader = make_api(scopes=["runs:read", "conversations:read"])
    run_ai_sdk(
        base_url=live_server.url,
        raw_key=writer.raw_key,
        conversation_id="chat-8",
        resource={"deployment.environment.name": "production", "service.version": "2.3.0"},
        metadata={"tier": "gold", "seats": 5, "tags": ["vip", "beta"]},
        call="generateText",  # it puts the SDK's user agent, ai/<version>, in its telemetry
    )
    (run,) = reader.get("/v1/runs").json()["data"]
    version = orjson.loads((NODE_DIR / "node_modules" / "ai" / "package.json").read_bytes())
    assert run["sdk_version"] == f"ai {version['version']}"
    assert reader.get(f"/v1/runs/{run['id']}/attributes").json() == {
        "object": "run_attributes",
        "run_id": run["id"],
        "environment": "production",
        "release": "2.3.0",
        "tags": ["vip", "beta"],
        "metadata": {"tier": "gold", "seats": 5},
    }
    for name, value in [("environment", "production"), ("release", "2.3.0"), ("tag", "vip"),
                        ("metadata", "tier:gold"), ("metadata", "seats:5")]:  # fmt: skip
        runs = reader.get("/v1/runs", params={name: value}).json()["data"]
        assert [item["id"] for item in runs] == [run["id"]], (name, value)
        found = reader.get("/v1/conversations", params={name: value}).json()["data"]
        assert [item["id"] for item in found] == ["chat-8"], (name, value)
        other = "staging" if name == "environment" else "tier:free" if name == "metadata" else "x"
        assert reader.get("/v1/runs", params={name: other}).json()["data"] == [], name
