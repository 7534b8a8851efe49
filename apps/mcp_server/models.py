"""Connected applications: a member's consent that an OAuth client (an MCP client that
registered itself with django-oauth-toolkit) may act on one Agent with some permissions.

The grant's permissions live on an `ApiKey` of kind `connected_app`, created with the consent
and revoked with it. That key has no usable secret; the MCP server mints short-lived resource
tokens from it (apps.mcp_server.resource_tokens), so /v1 checks scopes, owner rules, rate
limits and revocation for them exactly as for a key, through the same cache.
"""

from django.conf import settings
from django.db import models
from oauth2_provider.models import Application

from apps.common.ids import id_factory
from apps.workspaces.models import Agent, ApiKey


class ConnectedApplication(models.Model):
    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("cap"), editable=False
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="connected_apps")
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    grant_key = models.OneToOneField(ApiKey, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The Connected applications page: an Agent's grants, newest first.
            models.Index(fields=["agent", "-created_at"], name="connapp_agent_created"),
        ]
        constraints = [
            # One live grant per member, client and Agent; consenting again replaces it.
            models.UniqueConstraint(
                fields=["user", "application", "agent"],
                condition=models.Q(revoked_at__isnull=True),
                name="connapp_one_live_grant",
            )
        ]

    @property
    def scopes(self) -> list[str]:
        return list(self.grant_key.scopes)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class SpentAuthorizationCode(models.Model):
    """An authorization code already exchanged, kept (by its hash) so that a replay of it can
    revoke the tokens it was exchanged for (RFC 6749 4.1.2). The toolkit deletes the code
    itself at the exchange."""

    code_checksum = models.CharField(primary_key=True, max_length=64)
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    token_family = models.UUIDField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)
