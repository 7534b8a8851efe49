from django.conf import settings
from django.db import models
from django.db.models import F
from django.db.models.functions import Lower
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
        indexes = [
            # The Team page: a workspace's members, longest-standing first (keyset).
            models.Index(fields=["workspace", "created_at", "id"], name="membership_ws_joined"),
        ]

    @property
    def is_owner(self) -> bool:
        return self.role == self.Role.OWNER


class Effort(models.TextChoices):
    """How hard the model should think; null on the Agent means the model's own default."""

    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"


class Agent(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        ARCHIVED = "archived", "Archived"

    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("agt"), editable=False
    )
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="agents")
    # The configuration (apps.workspaces.configuration.CONFIGURATION_FIELDS): every change
    # is kept as an AgentRevision, so these columns always equal the latest revision.
    name = models.CharField(max_length=120)
    description = models.CharField(max_length=1000, blank=True, default="")
    instructions = models.TextField(blank=True, default="")
    # null (not ""): "the runtime's / the model's default", as the API shows it.
    model_id = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001
    effort = models.CharField(  # noqa: DJ001
        max_length=10, choices=Effort.choices, null=True, blank=True
    )
    knowledge_search_enabled = models.BooleanField(default=True)
    allowed_origins = models.JSONField(default=list, blank=True)
    # Number of the latest revision (1 once created through agent_create).
    revision = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(default=timezone.now)
    # Last change of the configuration or the status.
    updated_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # GET /v1/agents and the console's Agents page: a workspace's Agents, newest
            # first (keyset), optionally of one status.
            models.Index(fields=["workspace", "-created_at", "-id"], name="agent_ws_created"),
            models.Index(
                fields=["workspace", "status", "-created_at", "-id"], name="agent_ws_status"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ActorType(models.TextChoices):
    """Who made a change: a person in the console, an API key, a connected (OAuth) application
    through its resource token, or the service itself (workers, beat, commands)."""

    USER = "user", "User"
    API_KEY = "api_key", "API key"
    OAUTH_APP = "oauth_app", "Connected application"
    SYSTEM = "system", "System"


class AgentRevision(models.Model):
    """One configuration of an Agent, as it was after a change: revision 1 is the creation,
    every update or restore adds the next number. Nothing here is ever updated or deleted."""

    class Kind(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        RESTORED = "restored", "Restored"

    ActorType = ActorType

    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("agtrev"), editable=False
    )
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # The revision this one brought back, for kind=restored.
    restored_from = models.PositiveIntegerField(null=True, blank=True)
    # Every configuration field, as the Agent had it after this change.
    configuration = models.JSONField()
    changed_fields = models.JSONField(default=list)
    # Who made the change, kept as it was then: a renamed key or a deleted user still reads.
    actor_type = models.CharField(max_length=10, choices=ActorType.choices)
    actor_id = models.CharField(max_length=254, null=True, blank=True)  # noqa: DJ001 - none for the system
    actor_name = models.CharField(max_length=254)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            # Also serves GET /v1/agents/{agentId}/revisions: newest number first (keyset).
            models.UniqueConstraint(fields=["agent", "number"], name="agent_revision_number"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} r{self.number}"


class ApiKey(models.Model):
    class Kind(models.TextChoices):
        # A key a member or an integration made; its secret authenticates /v1 requests.
        KEY = "key", "API key"
        # The grant of a connected application (apps.mcp_server): it has no usable secret and
        # authenticates only through the short-lived resource tokens minted from it.
        CONNECTED_APP = "connected_app", "Connected application"

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
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.KEY)
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
        from apps.api.scopes import ALL_SCOPES

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


class ConsolePreference(models.Model):
    """What the console remembers of a person across sign-ins: the Agent they last chose, so a
    new session opens it rather than the alphabetically first (which may be an empty one)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="console_preference",
    )
    # Kept when the Agent is archived or the person leaves its workspace; the console then
    # falls back to an Agent they can still open.
    last_agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Console preference of {self.user_id}"


class Invitation(models.Model):
    """An owner's offer to join a workspace with a role, by a one-time link (and by e-mail when
    an address is given). Only the SHA-256 of the link's token is kept: the link is shown once.
    It can be used once, until `expires_at`, unless revoked first (apps.workspaces.services.
    members)."""

    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("inv"), editable=False
    )
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    # "" for a link invitation, which whoever holds the link may accept; with an address, only
    # an account of that address may.
    email = models.EmailField(blank=True, default="")
    role = models.CharField(
        max_length=10, choices=Membership.Role.choices, default=Membership.Role.MEMBER
    )
    # SHA-256 of the link's token (256-bit random, so a fast hash is enough); unique so
    # opening a link is one lookup.
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The Team page: a workspace's open (neither accepted nor revoked) invitations,
            # newest first (keyset).
            models.Index(
                fields=["workspace", "-created_at", "-id"],
                name="invitation_ws_open",
                condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"Invitation to {self.workspace_id} ({self.email or 'link'})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def status(self) -> str:
        """`accepted`, `revoked`, `expired` or `pending`, in that precedence."""
        if self.accepted_at is not None:
            return "accepted"
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.is_expired else "pending"


class AuditEvent(models.Model):
    """One change to a workspace: who (actor), when, from where, what (action and target) and
    the fields it changed, before and after (docs/audit-log.md). Written by the service that
    makes the change, in the same transaction; never updated; never holds a secret."""

    id = models.CharField(
        primary_key=True, max_length=40, default=id_factory("aud"), editable=False
    )
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    # The Agent the change concerns, when it concerns one; a plain id (no foreign key) so the
    # entry reads the same whatever happens to the Agent later.
    agent_id = models.CharField(max_length=40, blank=True, default="")
    # "<target>.<past participle>": "api_key.created", "document.deleted" (docs/audit-log.md).
    action = models.CharField(max_length=64)
    # Who, kept as it was then: a renamed key or a deleted user still reads.
    actor_type = models.CharField(max_length=10, choices=ActorType.choices)
    actor_id = models.CharField(max_length=254, blank=True, default="")
    actor_name = models.CharField(max_length=254, blank=True, default="")
    # The client address of the request (null for the system) and the request's id, which
    # the request log carries too.
    ip = models.GenericIPAddressField(null=True, blank=True)
    request_id = models.CharField(max_length=128, blank=True, default="")
    target_type = models.CharField(max_length=32)
    target_id = models.CharField(max_length=254, blank=True, default="")
    target_name = models.CharField(max_length=254, blank=True, default="")
    # {"field": {"from": old, "to": new}} for configuration changes; counts and other facts
    # of the change under plain names. Secrets never: only that they changed.
    changes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # GET /v1/audit_events and the Audit log page: a workspace's entries, newest first
            # (keyset), and the date range filter on the same range scan.
            models.Index(fields=["workspace", "-created_at", "-id"], name="audit_ws_created"),
            # The same, filtered by action ("every key revoked this quarter").
            models.Index(
                fields=["workspace", "action", "-created_at", "-id"], name="audit_ws_action"
            ),
            # The history of one thing: "everything that happened to this key".
            models.Index(
                fields=["workspace", "target_id", "-created_at", "-id"], name="audit_ws_target"
            ),
            # The Audit log page sorted by actor or by action (apps.workspaces.audit_pages
            # AUDIT_SORTS), either way round: one range at any depth.
            models.Index(
                F("workspace"), Lower(F("actor_name")), F("id"), name="audit_ws_actor_name"
            ),
            models.Index(fields=["workspace", "action", "id"], name="audit_ws_action_id"),
        ]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor_type}:{self.actor_id}"
