from django.core.management.base import BaseCommand, CommandError

from apps.common.errors import ServiceError
from apps.workspaces.models import ApiKey
from apps.workspaces.services import api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key by id; it stops working immediately."

    def add_arguments(self, parser) -> None:
        parser.add_argument("key_id", help="Key id, e.g. key_01J...")

    def handle(self, *args, **options) -> None:
        key = ApiKey.objects.select_related("agent").filter(pk=options["key_id"]).first()
        if key is None:
            raise CommandError(f"No API key with id {options['key_id']!r}.")
        try:
            api_key_revoke(agent=key.agent, key_id=key.pk, by_user=None)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Revoked {key.pk} ({key.prefix}).")
