"""The first keyword search of a fresh process, with and without the start-up warm-up.

    DATABASE_URL=postgres://... uv run python benchmarks/knowledge_first_search.py cold|warm

Run it several times each way, on a database holding an Agent with searchable passages (a
benchmark's): "cold" times the first and second keyword search of this fresh process; "warm"
first runs `lexical.warm_up()` (what `config/wsgi.py` starts in a thread for every web worker)
and says how long that took. The difference is what a web worker's first search no longer pays.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> None:
    import django

    django.setup()
    from apps.common import lexical
    from apps.knowledge import search
    from apps.knowledge.models import KnowledgeChunk
    from apps.workspaces.models import Agent

    agent_id = KnowledgeChunk.objects.filter(is_searchable=True).values_list("agent_id", flat=True)
    agent = Agent.objects.get(pk=agent_id.first())
    how = sys.argv[1] if len(sys.argv) > 1 else "cold"
    if how == "warm":
        started = time.perf_counter()
        lexical.warm_up()
        print(f"warm_up: {(time.perf_counter() - started) * 1000:.0f} ms")
    for label, query in (("first", "battery recycling lithium"), ("second", "refund policy")):
        started = time.perf_counter()
        search.search_chunks(agent=agent, query=query, limit=10, mode="keyword")
        print(f"{how}: {label} keyword search {(time.perf_counter() - started) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
