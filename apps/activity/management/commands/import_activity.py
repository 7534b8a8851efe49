"""Import activity records from a JSONL file: one record per line, the format of POST /v1/ingest.

Each line is recorded on its own (a bad line is rejected with its reason and the rest go on);
the summary counts created, updated, unchanged and rejected records.
"""

import sys
from pathlib import Path

import orjson
from django.core.management.base import BaseCommand, CommandError

from apps.activity.records import record_parse
from apps.activity.services import activity_record
from apps.common.errors import ServiceError
from apps.workspaces.models import Agent

MAX_REASONS_SHOWN = 20


class ProgressBar:
    """A one-line bar on a terminal; silent when the stream is not one (logs, pipes)."""

    def __init__(self, stream, total: int, width: int = 32) -> None:
        self.stream, self.total, self.width = stream, max(total, 1), width
        self.enabled = hasattr(stream, "isatty") and stream.isatty()

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        filled = self.width * done // self.total
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r[{bar}] {done}/{self.total}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")


class Command(BaseCommand):
    help = "Record activity (users, conversations, messages, runs) from a JSONL file."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="Path to a .jsonl file, or - for standard input.")
        parser.add_argument(
            "--agent", help="Agent id (agt_...); optional when there is exactly one Agent."
        )

    def _agent(self, agent_id: str | None) -> Agent:
        if agent_id:
            agent = Agent.objects.filter(pk=agent_id).first()
            if agent is None:
                raise CommandError(f"No Agent with id {agent_id!r}.")
            return agent
        agents = list(Agent.objects.filter(status=Agent.Status.ACTIVE)[:2])
        if len(agents) != 1:
            raise CommandError("Several Agents (or none) exist: pass --agent AGENT_ID.")
        return agents[0]

    def _lines(self, name: str) -> list[bytes]:
        if name == "-":
            return sys.stdin.buffer.read().splitlines()
        path = Path(name)
        if not path.is_file():
            raise CommandError(f"No such file: {name}")
        return path.read_bytes().splitlines()

    def handle(self, *args, **options) -> None:
        agent = self._agent(options["agent"])
        lines = self._lines(options["file"])
        counts = {"created": 0, "updated": 0, "unchanged": 0}
        rejected: list[str] = []
        progress = ProgressBar(self.stderr._out, len(lines))
        for number, line in enumerate(lines, start=1):
            if line.strip():
                label = f"line {number}"
                try:
                    item = orjson.loads(line)
                    record = record_parse(item, label=label)
                    result = activity_record(agent=agent, records=[record])
                except orjson.JSONDecodeError as exc:
                    rejected.append(f"{label}: malformed JSON ({exc})")
                except ServiceError as exc:
                    rejected.append(exc.message)
                else:
                    for name in counts:
                        counts[name] += getattr(result, name)
            if number % 50 == 0 or number == len(lines):
                progress.update(number)
        progress.close()
        self.stdout.write(
            f"Imported into {agent.pk}: {counts['created']} created, {counts['updated']} "
            f"updated, {counts['unchanged']} unchanged, {len(rejected)} rejected."
        )
        for reason in rejected[:MAX_REASONS_SHOWN]:
            self.stdout.write(f"  rejected {reason}")
        if len(rejected) > MAX_REASONS_SHOWN:
            self.stdout.write(f"  ... and {len(rejected) - MAX_REASONS_SHOWN} more rejected")
