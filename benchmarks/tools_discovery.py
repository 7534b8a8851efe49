"""Benchmark one MCP tool discovery through the guarded client, against a local SDK server.

    uv run python benchmarks/tools_discovery.py [--tools 500] [--runs 5]

Starts an `MCPServer` (the official SDK) with N tools over Streamable HTTP and over SSE on
127.0.0.1 (the test-only loopback permission is passed explicitly), then times
`list_remote_tools` end to end: guard checks, version negotiation, the paginated listing.
No database is touched: the write that follows a discovery is one transaction of bulk writes.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> None:
    import django

    django.setup()
    from mcp.server.mcpserver import MCPServer

    from apps.tools.mcp_client import Limits, list_remote_tools
    from tests.tools.mcp_servers import add_tool, start_sse_only, start_streamable

    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    server = MCPServer("bench")
    for index in range(args.tools):
        add_tool(
            server,
            f"tool_{index:04d}",
            lambda city, days=3: "x",
            description=f"Tool number {index}: looks something up for a city.",
        )
    limits = Limits(max_tools=max(args.tools, 1))
    for label, start in (("streamable_http", start_streamable), ("sse", start_sse_only)):
        running = start(server)
        timings = []
        try:
            for _ in range(args.runs):
                started = time.perf_counter()
                listing = list_remote_tools(running.url, allow_loopback=True, limits=limits)
                timings.append((time.perf_counter() - started) * 1000)
                assert len(listing.tools) == args.tools
        finally:
            running.stop()
        print(
            f"{label:16} {args.tools} tools: median {statistics.median(timings):.0f} ms, "
            f"max {max(timings):.0f} ms over {args.runs} runs"
        )


if __name__ == "__main__":
    main()
