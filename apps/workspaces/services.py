"""Writes for workspaces, memberships, Agents and API keys."""

import hashlib
import hmac
import logging
import pickle
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.api.throttling import (
    CountedRequest,
    KeyStoreUnavailable,
    key_record,
    key_record_delete,
    key_record_hit,
    key_record_put,
    key_record_tombstone,
    key_records_enabled,
)
from apps.common.errors import (
    BadRequest,
    Conflict,
    InsufficientScope,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
)
from apps.common.time import iso
from apps.workspaces import configuration
from apps.workspaces.models import Agent, AgentRevision, ApiKey, Membership, Workspace
from apps.workspaces.scopes import OWNER_SCOPES, parse_scopes
from apps.workspaces.selectors import is_workspace_owner

logger = logging.getLogger(__name__)

LOOKUP_ID_LENGTH = 12
LAST_USED_GRANULARITY = timedelta(minutes=1)


def workspace_create(*, name: str, owner) -> Workspace:
    with transaction.atomic():
        workspace = Workspace.objects.create(name=name)
        Membership.objects.create(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace


# --- Agents: configuration with revisions, archive and restore ----------------------------


@dataclass(frozen=True)
class Actor:
    """Who changed an Agent, as written into its revision history."""

    type: str
    id: str | None
    name: str


SYSTEM_ACTOR = Actor(type=AgentRevision.ActorType.SYSTEM, id=None, name="System")


def actor_for_user(user) -> Actor:
    # Users sign in with their email address: it is their stable, readable identity.
    return Actor(
        type=AgentRevision.ActorType.USER,
        id=user.email or user.get_username(),
        name=user.get_full_name() or user.email or user.get_username(),
    )


def actor_for_key(key: ApiKey) -> Actor:
    return Actor(type=AgentRevision.ActorType.API_KEY, id=key.pk, name=key.name)


def _write_revision(
    *, agent: Agent, kind: str, changed: list[str], actor: Actor, restored_from: int | None = None
) -> AgentRevision:
    return AgentRevision.objects.create(
        agent=agent,
        number=agent.revision,
        kind=kind,
        restored_from=restored_from,
        configuration=configuration.snapshot(agent),
        changed_fields=changed,
        actor_type=actor.type,
        actor_id=actor.id,
        actor_name=actor.name[:254],
        created_at=agent.updated_at,
    )


def agent_create(
    *,
    workspace: Workspace,
    name: str,
    description: str = "",
    instructions: str = "",
    model_id: str | None = None,
    effort: str | None = None,
    knowledge_search_enabled: bool = True,
    allowed_origins: list[str] | None = None,
    actor: Actor = SYSTEM_ACTOR,
) -> Agent:
    """Create an active Agent and its revision 1."""
    fields = configuration.clean(
        {
            "name": name,
            "description": description,
            "instructions": instructions,
            "model_id": model_id,
            "effort": effort,
            "knowledge_search_enabled": knowledge_search_enabled,
            "allowed_origins": allowed_origins or [],
        }
    )
    now = timezone.now()
    with transaction.atomic():
        agent = Agent.objects.create(
            workspace=workspace, revision=1, created_at=now, updated_at=now, **fields
        )
        # The first revision sets every field.
        _write_revision(
            agent=agent,
            kind=AgentRevision.Kind.CREATED,
            changed=list(configuration.CONFIGURATION_FIELDS),
            actor=actor,
        )
    return agent


def _agent_for_update(*, workspace_id: str, agent_id: str) -> Agent:
    agent = Agent.objects.select_for_update().filter(workspace_id=workspace_id, pk=agent_id).first()
    if agent is None:
        raise NotFound("No such Agent in this workspace.")
    return agent


def _apply_configuration(
    *, agent: Agent, target: dict, kind: str, actor: Actor, restored_from: int | None = None
) -> Agent:
    """Move a locked, active Agent to `target` and record the revision; no change, no revision."""
    if agent.status != Agent.Status.ACTIVE:
        raise Conflict("The Agent is archived; restore it before changing its configuration.")
    changed = configuration.changed_fields(configuration.snapshot(agent), target)
    if not changed:
        return agent
    for field in changed:
        setattr(agent, field, target[field])
    agent.revision += 1
    agent.updated_at = timezone.now()
    agent.save(update_fields=[*changed, "revision", "updated_at"])
    _write_revision(
        agent=agent, kind=kind, changed=changed, actor=actor, restored_from=restored_from
    )
    return agent


def agent_update(*, workspace_id: str, agent_id: str, changes: dict, actor: Actor) -> Agent:
    """Change some configuration fields; the result becomes the Agent's next revision.

    Sending the values the Agent already has changes nothing and writes no revision.
    """
    cleaned = configuration.clean(changes)
    with transaction.atomic():
        agent = _agent_for_update(workspace_id=workspace_id, agent_id=agent_id)
        target = {**configuration.snapshot(agent), **cleaned}
        return _apply_configuration(
            agent=agent, target=target, kind=AgentRevision.Kind.UPDATED, actor=actor
        )


def agent_revision_restore(
    *, workspace_id: str, agent_id: str, revision_id: str, actor: Actor
) -> Agent:
    """Bring back an earlier configuration. The restore is itself a new revision, so it can
    be undone the same way; restoring the current configuration changes nothing."""
    with transaction.atomic():
        agent = _agent_for_update(workspace_id=workspace_id, agent_id=agent_id)
        revision = AgentRevision.objects.filter(agent=agent, pk=revision_id).first()
        if revision is None:
            raise NotFound("No such revision for this Agent.")
        # Revisions are validated when written; clean() again so one written by an older
        # rule set cannot bring back a value today's rules refuse.
        target = {
            **configuration.snapshot(agent),
            **configuration.clean(
                {
                    field: revision.configuration[field]
                    for field in configuration.CONFIGURATION_FIELDS
                    if field in revision.configuration
                }
            ),
        }
        return _apply_configuration(
            agent=agent,
            target=target,
            kind=AgentRevision.Kind.RESTORED,
            actor=actor,
            restored_from=revision.number,
        )


def agent_archive(*, workspace_id: str, agent_id: str, acting_key: ApiKey | None = None) -> Agent:
    """Archive an Agent: its keys stop authenticating (401), its scheduled knowledge
    refreshes and webhook deliveries wait. Nothing is deleted; `agent_restore` undoes it."""
    with transaction.atomic():
        agent = _agent_for_update(workspace_id=workspace_id, agent_id=agent_id)
        if agent.status == Agent.Status.ARCHIVED:
            raise Conflict("The Agent is already archived.")
        if acting_key is not None and acting_key.agent_id == agent.pk:
            raise Conflict(
                "A key cannot archive its own Agent: the key would stop working. Use a key "
                "of another Agent of the workspace, or the console."
            )
        others_active = (
            Agent.objects.filter(workspace_id=workspace_id, status=Agent.Status.ACTIVE)
            .exclude(pk=agent.pk)
            .exists()
        )
        if not others_active:
            raise Conflict(
                "This is the workspace's last active Agent; create or restore another first."
            )
        now = timezone.now()
        agent.status = Agent.Status.ARCHIVED
        agent.archived_at = now
        agent.updated_at = now
        # save() (not update()) so the post_save hook drops the Agent's keys from the cache.
        agent.save(update_fields=["status", "archived_at", "updated_at"])
        _bury_agent_keys(agent)
    return agent


def agent_restore(*, workspace_id: str, agent_id: str) -> Agent:
    """Make an archived Agent active again: its keys, refreshes and deliveries resume."""
    with transaction.atomic():
        agent = _agent_for_update(workspace_id=workspace_id, agent_id=agent_id)
        if agent.status == Agent.Status.ACTIVE:
            raise Conflict("The Agent is not archived.")
        agent.status = Agent.Status.ACTIVE
        agent.archived_at = None
        agent.updated_at = timezone.now()
        agent.save(update_fields=["status", "archived_at", "updated_at"])
    return agent


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_create(
    *,
    agent: Agent,
    name: str,
    scopes: list[str] | str,
    created_by=None,
    expires_at: datetime | None = None,
    parent: ApiKey | None = None,
    kind: str = ApiKey.Kind.KEY,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its full secret, which is never retrievable again.

    This is the bare write; who may grant what is checked by `api_key_create_by_member` (the
    console) and `api_key_create_by_key` (POST /v1/api_keys), which both end here.
    """
    name = (name or "").strip()
    if not name or len(name) > 120:
        raise BadRequest("name: give the key a name of 1 to 120 characters.")
    try:
        scope_list = parse_scopes(scopes)
    except ValueError as exc:
        raise BadRequest(f"scopes: {exc}") from None
    if expires_at is not None and expires_at <= timezone.now():
        raise BadRequest("expires_at: must be in the future.")
    lookup_id = secrets.token_hex(LOOKUP_ID_LENGTH // 2)
    secret = secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        agent=agent,
        name=name,
        lookup_id=lookup_id,
        secret_hash=_hash_secret(secret),
        scopes=scope_list,
        created_by=created_by,
        expires_at=expires_at,
        parent=parent,
        kind=kind,
    )
    return key, f"{settings.API_KEY_PREFIX}_{lookup_id}{secret}"


def api_key_grant_check(*, workspace_id: str, user, scopes: list[str]) -> None:
    """Only a workspace owner may grant the owner permissions (contract 5.3)."""
    needs_owner = sorted(set(scopes) & OWNER_SCOPES)
    if needs_owner and not is_workspace_owner(
        user_id=getattr(user, "pk", None), workspace_id=workspace_id
    ):
        raise InsufficientScope(
            needs_owner[0], f"Only workspace owners can grant: {', '.join(needs_owner)}."
        )


def api_key_create_by_member(
    *, agent: Agent, user, name: str, scopes: list[str], expires_at: datetime | None = None
) -> tuple[ApiKey, str]:
    """A key made in the console by a member of the Agent's workspace."""
    api_key_grant_check(workspace_id=agent.workspace_id, user=user, scopes=scopes)
    return api_key_create(
        agent=agent, name=name, scopes=scopes, created_by=user, expires_at=expires_at
    )


# Permissions that a key created over the API can never hold: it could otherwise mint keys
# that outlive the revocation of the key that made them, one generation after another.
NEVER_DELEGATED = frozenset({"api_keys:create"})


def api_key_manager_check(*, key: ApiKey) -> None:
    """Managing keys over the API needs `api_keys:create` (owner, checked with the scope) and
    `auth_tokens:create` too (contract 5.3)."""
    if "auth_tokens:create" not in key.scopes:
        raise InsufficientScope(
            "auth_tokens:create",
            "Managing integration keys needs the 'auth_tokens:create' permission besides "
            "'api_keys:create'; this API key lacks it.",
        )


def api_key_create_by_key(
    *,
    parent: ApiKey,
    agent: Agent,
    name: str,
    scopes: list[str],
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """A narrow integration key made over POST /v1/api_keys by `parent`.

    Its permissions are a subset of the parent's and never include `api_keys:create`; it
    cannot outlive an expiring parent; it is recorded as created by the parent's creator.
    """
    api_key_manager_check(key=parent)
    if agent.workspace_id != parent.agent.workspace_id or agent.status != Agent.Status.ACTIVE:
        raise NotFound("No such Agent for this API key.")
    try:
        scope_list = parse_scopes(scopes)
    except ValueError as exc:
        raise BadRequest(f"scopes: {exc}") from None
    forbidden = sorted(set(scope_list) & NEVER_DELEGATED)
    if forbidden:
        raise BadRequest(
            f"scopes: a key created over the API can never hold {', '.join(forbidden)}."
        )
    not_held = sorted(set(scope_list) - set(parent.scopes))
    if not_held:
        raise InsufficientScope(
            not_held[0],
            f"A new key's permissions must be a subset of this key's; it lacks: "
            f"{', '.join(not_held)}.",
        )
    if parent.expires_at is not None:
        if expires_at is None:
            expires_at = parent.expires_at
        elif expires_at > parent.expires_at:
            raise BadRequest(
                f"expires_at: cannot be later than this API key's own expiry "
                f"({iso(parent.expires_at)})."
            )
    api_key_grant_check(workspace_id=agent.workspace_id, user=parent.created_by, scopes=scope_list)
    return api_key_create(
        agent=agent,
        name=name,
        scopes=scope_list,
        created_by=parent.created_by,
        expires_at=expires_at,
        parent=parent,
    )


def api_key_revoke(*, agent: Agent, key_id: str, by_user) -> ApiKey:
    """Revoke a key of `agent`: it answers 401 from the very next request, or the revocation
    fails. Owners may revoke any key, members only their own; `by_user=None` is an operator at
    the command line.

    The cached copy of the key is deleted before the revocation commits. If Redis cannot delete
    it (paused, failing over, unreachable) the change is rolled back and ServiceUnavailable says
    so: a cached copy would otherwise keep the key working for up to a minute.
    """
    key = ApiKey.objects.filter(agent=agent, pk=key_id, kind=ApiKey.Kind.KEY).first()
    if key is None:
        raise NotFound("No such API key.")
    if (
        by_user is not None
        and key.created_by_id != by_user.pk
        and not is_workspace_owner(user_id=by_user.pk, workspace_id=agent.workspace_id)
    ):
        raise InsufficientScope(
            "api_keys:create", "Only owners can revoke keys created by someone else."
        )
    if key.revoked_at is not None:
        raise Conflict("This API key is already revoked.")
    api_key_revoke_now(key)
    return key


def api_key_revoke_now(key: ApiKey, *, then: Callable[[], None] | None = None) -> None:
    """Mark `key` revoked so that it answers 401 from the very next request, whoever checks
    next; `then` runs inside the same transaction (a connected application also deletes its
    OAuth tokens there). Who may revoke is the caller's check.

    The cached copy of the key is replaced by a tombstone before the revocation commits, and
    again once it has. A request that read the still-active row before the commit (or waited
    on its lock to record `last_used_at`) may try to cache it afterwards: the tombstone refuses
    that write, so no cache brings a revoked key back. If Redis cannot take the tombstone
    (paused, failing over, unreachable) the change is rolled back and ServiceUnavailable says
    so. Browser tokens and resource tokens find their minting or grant key through the same
    cache, so they die with it.
    """
    with transaction.atomic():
        # Conditional update: two revocations racing leave one revoked_at.
        ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        if then is not None:
            then()
        try:
            _bury_cached_key(key.lookup_id, seconds=REVOKED_TOMBSTONE_SECONDS)
        except Exception as exc:
            logger.warning("revocation of %s undone: key cache unavailable (%r)", key.pk, exc)
            raise ServiceUnavailable(
                "The API key cache could not be cleared, so the key was not revoked and still "
                "works. Try again in a few seconds.",
                retry_after=KEY_REVOKE_RETRY_AFTER,
            ) from None
    key.refresh_from_db(fields=["revoked_at"])


# Authentication is on every API request, so the key row (with its Agent and workspace) is
# kept for a short while as a record in the rate limiter's Redis (apps.api.throttling), where a
# request is looked up and counted in one round trip. Revocation deletes the record before it
# commits, and fails if it cannot, so it takes effect on the next request; without Redis (the
# embedded default) there is no cache, because a per-process one could not be told about a
# revocation made by another process.
KEY_CACHE_SECONDS = 60
KEY_REVOKE_RETRY_AFTER = 5
# How long a revoked key's tombstone keeps its place in the cache: far longer than any request
# can take between reading the row and writing the cache (a revocation is final anyway; the
# key's requests then read the database and get 401).
REVOKED_TOMBSTONE_SECONDS = 24 * 3600


def _key_cache_name(lookup_id: str) -> str:
    return f"api-key:v2:{lookup_id}"


def _key_from_record(payload: bytes) -> ApiKey:
    # Written by _remember_key into our own Redis, as Django's Redis cache would pickle it.
    return pickle.loads(payload)  # noqa: S301


def _remember_key(key: ApiKey) -> None:
    if not key_records_enabled():
        return
    record = key_record(
        secret_hash=key.secret_hash,
        # The window's name: the key's id, as Credential.rate_limit_id says.
        window_name=key.pk,
        payload=pickle.dumps(key, pickle.HIGHEST_PROTOCOL),
    )
    try:
        key_record_put(_key_cache_name(key.lookup_id), record, seconds=KEY_CACHE_SECONDS)
    except KeyStoreUnavailable:
        logger.warning("API key cache unavailable", exc_info=True)


def _bury_cached_key(lookup_id: str, *, seconds: int) -> None:
    """Tombstone the cached copy now (raises KeyStoreUnavailable when Redis cannot) and once
    more after the surrounding transaction commits (best effort): a late cache write of the row
    as it was before the change cannot land in between or after."""
    if not key_records_enabled():
        return
    key_record_tombstone(_key_cache_name(lookup_id), seconds=seconds)

    def again() -> None:
        try:
            key_record_tombstone(_key_cache_name(lookup_id), seconds=seconds)
        except KeyStoreUnavailable:
            logger.error("could not tombstone a cached API key after commit", exc_info=True)

    transaction.on_commit(again)


def _forget_cached_key(lookup_id: str) -> None:
    """Best effort, now and after commit, for changes that are not refused when Redis fails
    (saves and deletes of keys and Agents through the signals below). A delete, not a
    tombstone: an Agent's configuration change must not keep its keys out of the cache."""
    if not key_records_enabled():
        return

    def forget() -> None:
        try:
            key_record_delete(_key_cache_name(lookup_id))
        except KeyStoreUnavailable:
            logger.error("could not drop a cached API key", exc_info=True)

    forget()
    transaction.on_commit(forget)


def _bury_agent_keys(agent: Agent) -> None:
    """Archiving stops an Agent's keys like a revocation: tombstones (for as long as a cache
    entry lives), so a request in flight cannot cache a key with its Agent still active."""
    if not key_records_enabled():
        return
    for lookup_id in ApiKey.objects.filter(agent_id=agent.pk).values_list("lookup_id", flat=True):
        try:
            _bury_cached_key(lookup_id, seconds=KEY_CACHE_SECONDS)
        except KeyStoreUnavailable:
            logger.error("could not tombstone a cached API key", exc_info=True)


def api_key_cache_forget(sender, instance: ApiKey, created: bool = False, **kwargs) -> None:
    if not created:  # a new key was never cached
        _forget_cached_key(instance.lookup_id)


def api_key_cache_forget_for_agent(
    sender, instance: Agent, created: bool = False, **kwargs
) -> None:
    if created or not key_records_enabled():
        return
    for lookup_id in ApiKey.objects.filter(agent_id=instance.pk).values_list(
        "lookup_id", flat=True
    ):
        _forget_cached_key(lookup_id)


def _key_from_database(lookup_id: str, *, remember: bool = True) -> ApiKey | None:
    key = (
        ApiKey.objects.select_related("agent__workspace")
        # The system prompt (up to 32k characters) is not needed to authenticate and would
        # make every cached key that much larger.
        .defer("agent__instructions")
        .filter(lookup_id=lookup_id)
        .first()
    )
    if key is not None and remember:
        _remember_key(key)
    return key


def api_key_by_lookup_id_counted(
    lookup_id: str, *, window_name: str | None = None, secret_hash: str | None = None
) -> tuple[ApiKey | None, CountedRequest | None]:
    """The key with this public lookup id (with its Agent and workspace) for a request, and the
    request counted in its rate window: from the shared cache when it is there, in the same
    Redis call (no database read), counted under `window_name` (default: the key's id) and,
    given a `secret_hash`, only if it is the key's. The count is None when nothing was counted
    (the throttle then counts) and says so when the store was down."""
    counted: CountedRequest | None = None
    if key_records_enabled():
        payload, counted = key_record_hit(
            _key_cache_name(lookup_id), secret_hash=secret_hash, window_name=window_name
        )
        if payload is not None:
            return _key_from_record(payload), counted
    # Not cached, or the store is down (counted then says so, and writing would wait for it
    # once more).
    return _key_from_database(lookup_id, remember=counted is None), counted


def api_key_usable_check(key: ApiKey, *, what: str = "The API key") -> None:
    """Raise Unauthorized unless the key may be used now. Checked on every request against
    the (possibly cached) row, so a cached key past its expiry is refused all the same."""
    if key.revoked_at is not None:
        raise Unauthorized(f"{what} has been revoked.")
    if key.expires_at is not None and key.expires_at <= timezone.now():
        raise Unauthorized(f"{what} expired at {iso(key.expires_at)}.")
    if key.agent.status != Agent.Status.ACTIVE:
        raise Unauthorized(f"{what}'s Agent is archived.")


def api_key_authenticate(*, raw_key: str) -> tuple[ApiKey, CountedRequest | None]:
    """Find the active key a bearer token names, or raise Unauthorized.

    With the key cached, the request is also counted in the key's rate window by the same
    Redis call, and the count comes back (the throttle then counts nothing); otherwise it is
    None and the throttle counts.
    """
    prefix = f"{settings.API_KEY_PREFIX}_"
    if not raw_key.startswith(prefix) or len(raw_key) < len(prefix) + LOOKUP_ID_LENGTH + 20:
        raise Unauthorized("The API key is malformed.")
    body = raw_key[len(prefix) :]
    lookup_id, secret = body[:LOOKUP_ID_LENGTH], body[LOOKUP_ID_LENGTH:]
    secret_hash = _hash_secret(secret)
    key, counted = api_key_by_lookup_id_counted(lookup_id, secret_hash=secret_hash)
    if (
        key is None
        # A connected application's grant has no usable secret; refuse it all the same.
        or key.kind != ApiKey.Kind.KEY
        or not hmac.compare_digest(key.secret_hash, secret_hash)
    ):
        raise Unauthorized("The API key is not valid.")
    api_key_usable_check(key)
    _touch_last_used(key)
    return key, counted


def _touch_last_used(key: ApiKey) -> None:
    """Record use at most once a minute, so busy keys do not write on every request."""
    now = timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USED_GRANULARITY:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_GRANULARITY)
    # Not for a key revoked meanwhile (this update may have waited on the revocation's lock):
    # then the copy in hand is stale and is not cached again (the tombstone would refuse it).
    touched = ApiKey.objects.filter(stale, pk=key.pk, revoked_at__isnull=True).update(
        last_used_at=now
    )
    key.last_used_at = now
    if touched:
        _remember_key(key)


def demo_seed(*, email: str, password: str) -> dict:
    """Idempotently create the demo owner, workspace, Agent and a fresh full-scope key."""
    from apps.workspaces.scopes import ALL_SCOPES

    user_model = get_user_model()
    with transaction.atomic():
        user, created = user_model.objects.get_or_create(
            username=email, defaults={"email": email, "first_name": "Demo", "last_name": "Owner"}
        )
        if created or not user.check_password(password):
            user.set_password(password)
            user.save(update_fields=["password"])
        membership = (
            Membership.objects.select_related("workspace")
            .filter(user=user, role=Membership.Role.OWNER, workspace__name="Demo workspace")
            .first()
        )
        workspace = (
            membership.workspace
            if membership
            else workspace_create(name="Demo workspace", owner=user)
        )
        agent = workspace.agents.filter(name="Support Agent").first() or _demo_agent(
            workspace=workspace, owner=user
        )
        key, raw = api_key_create(
            agent=agent, name="Demo full-scope key", scopes=list(ALL_SCOPES), created_by=user
        )
    return {"workspace": workspace, "agent": agent, "user": user, "key": key, "raw_key": raw}


DEMO_INSTRUCTIONS_V1 = """You are the support assistant of Acme Outdoor, an online shop for hiking gear.
Answer questions about orders, shipping, returns and products.
Be friendly and brief."""

DEMO_INSTRUCTIONS = """You are the support assistant of Acme Outdoor, an online shop for hiking gear.
Answer questions about orders, shipping, returns and products.
Be friendly and brief: three short paragraphs at most.

Rules:
- Search the knowledge base before answering policy questions, and cite the article.
- Never promise a refund amount; say what the refund policy says and offer a ticket.
- Look orders up with lookup_order; ask for the order number if you do not have it.
- If the customer is upset or asks for a person, create a ticket and say when they will hear back.

Answer in the customer's language."""


def _demo_agent(*, workspace: Workspace, owner) -> Agent:
    """The demo Agent with a realistic configuration and a short history to look at."""
    agent = agent_create(
        workspace=workspace,
        name="Support Agent",
        description="Answers customer questions on the shop's website.",
        instructions=DEMO_INSTRUCTIONS_V1,
        model_id="gpt-4.1-mini",
        allowed_origins=["https://shop.example.com"],
        actor=actor_for_user(owner),
    )
    agent_update(
        workspace_id=workspace.pk,
        agent_id=agent.pk,
        changes={"instructions": DEMO_INSTRUCTIONS, "model_id": "o4-mini", "effort": "medium"},
        actor=actor_for_user(owner),
    )
    return agent_update(
        workspace_id=workspace.pk,
        agent_id=agent.pk,
        changes={"allowed_origins": ["https://shop.example.com", "https://help.example.com"]},
        actor=actor_for_user(owner),
    )
