from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.common.ids import id_factory


class Workspace(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=id_factory("ws"), editable=False)
    name = models.CharField(max_length=120)
    # Credits the workspace means to spend per UTC month; null = no limit. Set by an owner on
    # the Usage page; crossing 80 % and 100 % is announced once per month (apps.usage).
    monthly_credit_limit = models.DecimalField(
        max_digits=20, decimal_places=2, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(monthly_credit_limit__isnull=True)
                | models.Q(monthly_credit_limit__gt=0),
                name="workspace_credit_limit_positive",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique_user"),
        ]

    @property
    def is_owner(self) -> bool:
        return self.role == self.Role.OWNER


class Agent(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        ARCHIVED = "archived", "Archived"

    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("agt"), editable=False
    )
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=120)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    # Origins (scheme://host[:port]) whose pages may call /v1/me with a browser token.
    allowed_origins = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("key"), editable=False
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=120)
    # Public part of the key, shown in lists and logs; unique so authentication is one lookup.
    lookup_id = models.CharField(max_length=24, unique=True)
    # SHA-256 of the secret part. Secrets are 256-bit random, so a fast hash is enough.
    secret_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Past this instant the key is refused (401); null never expires.
    expires_at = models.DateTimeField(null=True, blank=True)
    # The key that created this one over POST /v1/api_keys; null for keys made in the console
    # or by a command. Revoking the parent leaves its children working (docs/keys-and-tokens.md).
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )

    class Meta:
        indexes = [
            # The API keys page: an Agent's keys, newest first.
            models.Index(fields=["agent", "-created_at"], name="apikey_agent_created"),
        ]

    @property
    def prefix(self) -> str:
        return f"{settings.API_KEY_PREFIX}_{self.lookup_id}"

    @property
    def has_every_scope(self) -> bool:
        from apps.workspaces.scopes import ALL_SCOPES

        return set(self.scopes) >= set(ALL_SCOPES)

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired

    @property
    def status(self) -> str:
        """`revoked`, `expired` or `active`, in that precedence."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.is_expired else "active"
