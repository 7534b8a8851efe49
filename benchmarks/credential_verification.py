"""Cost of authenticating one request: an API key against a browser token.

    DATABASE_URL=postgres://... REDIS_URL=redis://... uv run python benchmarks/credential_verification.py [--rounds 5000]

Migrates the database it is given, creates a workspace, an Agent, a key and one browser token,
then times `api_key_authenticate` and `browser_token_verify` with the key cache warm (the
steady state) and counts the database queries each makes. Needs Redis: without it there is no
shared key cache and both read the key row on every request.
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def timed(function, rounds: int) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        function()
    return (time.perf_counter() - started) / rounds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5000)
    rounds = parser.parse_args().rounds

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.workspaces.browser_tokens import browser_token_sign, browser_token_verify
    from apps.workspaces.models import Workspace
    from apps.workspaces.services import agent_create, api_key_authenticate, api_key_create

    if not settings.REDIS_URL:
        sys.exit("Set REDIS_URL: the steady state measured here is a warm shared key cache.")
    call_command("migrate", verbosity=0)
    workspace = Workspace.objects.create(name="Credential benchmark")
    agent = agent_create(workspace=workspace, name="Bench Agent")
    key, raw_key = api_key_create(agent=agent, name="bench", scopes=["auth_tokens:create"])
    token, _ = browser_token_sign(key=key, user_id="usr_bench", lifetime_seconds=3600)
    try:
        results = {}
        for label, verify in (
            ("API key", lambda: api_key_authenticate(raw_key=raw_key)),
            ("browser token", lambda: browser_token_verify(raw_token=token)),
        ):
            verify()  # warm the cache
            with CaptureQueriesContext(connection) as queries:
                verify()
            results[label] = (timed(verify, rounds), len(queries))
        print(f"{rounds} rounds each, key cache warm (Redis at {settings.REDIS_URL})")
        for label, (micros, query_count) in results.items():
            print(f"  {label:14} {micros:8.1f} µs per verification, {query_count} queries")
    finally:
        workspace.delete()


if __name__ == "__main__":
    main()
