# ruff: noqa: DJ001 - the contract tells null ("not recorded") from "" apart, so strings are nullable.
"""The end users an Agent observes: the contract's `user` resource."""

from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Lower

from apps.activity.models.links import ID_MAX_LENGTH, agent_field
from apps.common.ids import id_factory


class EndUser(models.Model):
    """A person observed by the Agent: the contract's `user` resource."""

    class IdentityType(models.TextChoices):
        ANONYMOUS = "anonymous", "Anonymous"
        USER = "user", "User"
        PREVIEW = "preview", "Preview"
        UNKNOWN = "unknown", "Unknown"

    row = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=ID_MAX_LENGTH, default=id_factory("usr"))
    agent = agent_field()
    external_id = models.CharField(max_length=255, null=True, blank=True)
    identity_type = models.CharField(
        max_length=20, choices=IdentityType.choices, default=IdentityType.UNKNOWN
    )
    display_name = models.CharField(max_length=255, null=True, blank=True)
    email = models.CharField(max_length=320, null=True, blank=True)
    avatar_url = models.CharField(max_length=2048, null=True, blank=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()

    class Meta:
        indexes = [
            # GET /v1/users and the Users page: an Agent's users, most recently seen first.
            models.Index(fields=["agent", "-last_seen_at", "-id"], name="enduser_agent_seen"),
            # The Users page sorted by first seen (selectors.USER_SORTS).
            models.Index(
                fields=["agent", "-first_seen_at", "-id"], name="enduser_agent_first_seen"
            ),
            # The Users page sorted by name: the expression of selectors.USER_SORTS exactly, or
            # the index is not used.
            models.Index(
                F("agent"),
                Lower(Coalesce(F("display_name"), F("id"))),
                F("id"),
                name="enduser_agent_name",
            ),
            # ... by email, external id or identity (the same expressions as USER_SORTS).
            models.Index(
                F("agent"),
                Lower(Coalesce(F("email"), Value(""))),
                F("id"),
                name="enduser_agent_email",
            ),
            models.Index(
                F("agent"), Coalesce(F("external_id"), Value("")), F("id"), name="enduser_agent_ext"
            ),
            models.Index(fields=["agent", "identity_type", "id"], name="enduser_agent_identity"),
        ]
        constraints = [
            # Ids are the runtime's and unique per Agent only (see the package's docstring).
            models.UniqueConstraint(fields=["agent", "id"], name="enduser_agent_id"),
            # Recording upserts by external id: at most one user per external id and Agent.
            models.UniqueConstraint(
                fields=["agent", "external_id"],
                condition=models.Q(external_id__isnull=False),
                name="enduser_unique_external_id",
            ),
        ]

    def __str__(self) -> str:
        return self.display_name or self.email or self.external_id or self.id
