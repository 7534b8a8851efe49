"""`manage.py seed_demo`: the demo workspace with every app's demo data, composed here where
every app may be known (each app keeps its own `demo.py`)."""

import orjson
from django.core.management.base import BaseCommand

from apps.activity.demo import activity_seed_demo
from apps.knowledge.demo import knowledge_seed_demo
from apps.scores.demo import scores_seed_demo
from apps.usage.rollup import rollup_rebuild
from apps.webhooks.demo import webhook_seed_demo
from apps.workspaces.demo import demo_seed

DEMO_EMAIL = "owner@demo.example"
DEMO_PASSWORD = "demo-owner-password"


class Command(BaseCommand):
    help = "Create (idempotently) the demo workspace, its owner, one Agent and a full-scope key."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args, **options) -> None:
        demo = demo_seed(email=DEMO_EMAIL, password=DEMO_PASSWORD)
        seeded = activity_seed_demo(agent=demo["agent"])
        # The demo's runs are bulk-inserted, not recorded one by one: count them in the rollup.
        rollup_rebuild(agent_ids=[demo["agent"].pk])
        articles = knowledge_seed_demo(agent=demo["agent"])
        webhook = webhook_seed_demo(agent=demo["agent"])
        scores_seed_demo(agent=demo["agent"])
        result = {
            "workspace_id": demo["workspace"].pk,
            "agent_id": demo["agent"].pk,
            "owner_email": DEMO_EMAIL,
            "owner_password": DEMO_PASSWORD,
            "api_key": demo["raw_key"],
        }
        if options["json"]:
            self.stdout.write(orjson.dumps(result).decode())
            return
        self.stdout.write(self.style.SUCCESS("Demo workspace ready."))
        self.stdout.write(f"  Workspace  {result['workspace_id']}")
        self.stdout.write(f"  Agent      {result['agent_id']}")
        self.stdout.write(f"  Owner      {DEMO_EMAIL} / {DEMO_PASSWORD}")
        self.stdout.write(f"  API key    {result['api_key']}  (shown once; full scope)")
        if seeded:
            self.stdout.write(f"  Activity   {seeded}")
        if articles:
            self.stdout.write(f"  Knowledge  {articles}")
        if webhook:
            self.stdout.write(f"  Webhooks   {webhook}")
