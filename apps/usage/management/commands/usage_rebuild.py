from django.core.management.base import BaseCommand, CommandError

from apps.usage.rollup import rollup_rebuild
from apps.workspaces.models import Agent


class Command(BaseCommand):
    help = (
        "Recompute the daily usage rollup from the runs (every Agent, or those given): for "
        "activity recorded before the rollup existed or written around the recording service."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--agent", action="append", dest="agents", metavar="AGENT_ID")

    def handle(self, *args, **options) -> None:
        agent_ids = options["agents"]
        if agent_ids:
            known = set(Agent.objects.filter(pk__in=agent_ids).values_list("pk", flat=True))
            unknown = sorted(set(agent_ids) - known)
            if unknown:
                raise CommandError(f"No such Agent: {', '.join(unknown)}")
        runs = rollup_rebuild(agent_ids=agent_ids)
        self.stdout.write(f"Usage rollup rebuilt from {runs:,} runs.")
