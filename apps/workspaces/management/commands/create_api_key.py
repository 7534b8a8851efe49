import orjson
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from apps.common.errors import ServiceError
from apps.workspaces.models import Agent
from apps.workspaces.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for an Agent and print it (the secret is shown only here)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--agent", required=True, help="Agent id, e.g. agt_01J...")
        parser.add_argument(
            "--scopes", required=True, help="Comma-separated, e.g. runs:read,knowledge:write"
        )
        parser.add_argument("--name", default="Command-line key")
        parser.add_argument("--created-by", dest="created_by", help="Email of the creating user")
        parser.add_argument("--json", action="store_true", help='Print {"id", "key", "scopes"}.')

    def handle(self, *args, **options) -> None:
        agent = Agent.objects.filter(pk=options["agent"]).first()
        if agent is None:
            raise CommandError(f"No Agent with id {options['agent']!r}.")
        creator = None
        if options["created_by"]:
            creator = get_user_model().objects.filter(email__iexact=options["created_by"]).first()
            if creator is None:
                raise CommandError(f"No user with email {options['created_by']!r}.")
        try:
            key, raw = api_key_create(
                agent=agent, name=options["name"], scopes=options["scopes"], created_by=creator
            )
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        if options["json"]:
            self.stdout.write(
                orjson.dumps({"id": key.pk, "key": raw, "scopes": key.scopes}).decode()
            )
        else:
            self.stdout.write(f"{raw}\n(id {key.pk}; scopes {', '.join(key.scopes)}; shown once)")
