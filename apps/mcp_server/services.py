"""Writes for connected applications: consent, revocation, and the exchange of an OAuth access
token for a resource-bound API token."""

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken
from oauth2_provider.settings import oauth2_settings

from apps.common.errors import BadRequest, InsufficientScope, NotFound, Unauthorized
from apps.mcp_server.models import ConnectedApplication, SpentAuthorizationCode
from apps.mcp_server.oauth import GRANTABLE_SCOPES, agent_scope, split_grant_scopes
from apps.mcp_server.resource_tokens import resource_token_sign
from apps.workspaces.audit import audit_record
from apps.workspaces.events import MemberRemoved
from apps.workspaces.models import Agent, ApiKey
from apps.workspaces.selectors import agent_list_for_user, is_workspace_owner
from apps.workspaces.services import api_key_create, api_key_grant_check, api_key_revoke_now

# A connection records its use at most this often (the MCP server calls on every request).
LAST_USED_GRANULARITY = timedelta(minutes=1)


def connected_app_grant_check(*, user, agent_id: str, scopes: list[str]) -> Agent:
    """The Agent a member may grant `scopes` on, or the ServiceError saying why not. Writes
    nothing: the consent page checks this before the authorization response is made."""
    agent = agent_list_for_user(user=user).filter(pk=agent_id).first()
    if agent is None:
        raise NotFound("Choose one of your workspaces' active Agents.")
    unknown = sorted(set(scopes) - set(GRANTABLE_SCOPES))
    if unknown:
        raise BadRequest(f"These permissions cannot be granted here: {', '.join(unknown)}.")
    if not scopes:
        raise BadRequest("Choose at least one permission.")
    api_key_grant_check(workspace_id=agent.workspace_id, user=user, scopes=scopes)
    return agent


def connected_app_grant(
    *, user, application: Application, agent_id: str, scopes: list[str]
) -> ConnectedApplication:
    """Record a member's consent: `application` may act on the Agent with `scopes`. A live
    grant of the same member, client and Agent is replaced (its tokens stop working)."""
    agent = connected_app_grant_check(user=user, agent_id=agent_id, scopes=scopes)
    with transaction.atomic():
        previous = ConnectedApplication.objects.filter(
            user=user, application=application, agent=agent, revoked_at__isnull=True
        ).first()
        if previous is not None:
            _revoke(previous)
        grant_key, _unused_secret = api_key_create(
            agent=agent,
            name=(application.name or "MCP client")[:120],
            scopes=scopes,
            created_by=user,
            kind=ApiKey.Kind.CONNECTED_APP,
        )
        connection = ConnectedApplication.objects.create(
            agent=agent, application=application, user=user, grant_key=grant_key
        )
        _audit(connection, "connected_app.connected", {"scopes": sorted(scopes)})
        return connection


def _audit(connection: ConnectedApplication, action: str, changes: dict | None = None) -> None:
    audit_record(
        workspace_id=connection.agent.workspace_id,
        agent_id=connection.agent_id,
        action=action,
        target_type="connected_app",
        target_id=connection.pk,
        target_name=connection.grant_key.name,
        changes=changes,
    )


def connected_app_revoke(*, connection: ConnectedApplication, by_user) -> ConnectedApplication:
    """End a grant: its OAuth tokens and every resource token minted from it stop at once.
    Owners may revoke any grant of their Agents, members their own."""
    if connection.user_id != by_user.pk and not is_workspace_owner(
        user_id=by_user.pk, workspace_id=connection.agent.workspace_id
    ):
        raise InsufficientScope(
            "mcp_servers:write", "Only owners can revoke an application someone else connected."
        )
    if connection.revoked_at is None:
        with transaction.atomic():
            _revoke(connection)
            _audit(connection, "connected_app.disconnected")
        connection.refresh_from_db(fields=["revoked_at"])
    return connection


def _revoke(connection: ConnectedApplication) -> None:
    def end_oauth_tokens() -> None:
        ConnectedApplication.objects.filter(pk=connection.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        mine = Q(user_id=connection.user_id, application_id=connection.application_id)
        for model in (AccessToken, Grant):
            # `contains` narrows in SQL; the exact Agent is checked on the split scopes.
            rows = model.objects.filter(mine, scope__contains=agent_scope(connection.agent_id))
            model.objects.filter(
                pk__in=[
                    pk for pk, text in rows.values_list("pk", "scope") if _is_for(connection, text)
                ]
            ).delete()
        # A refresh token carries no scope; its access token does (or is gone: then it cannot
        # be told apart, and goes too).
        refresh = RefreshToken.objects.filter(mine).select_related("access_token")
        RefreshToken.objects.filter(
            pk__in=[
                token.pk
                for token in refresh
                if token.access_token is None or _is_for(connection, token.access_token.scope)
            ]
        ).delete()

    api_key_revoke_now(connection.grant_key, then=end_oauth_tokens)


def connected_apps_end_for_member(event: MemberRemoved) -> None:
    """A person who leaves a workspace (or is removed) no longer acts there through the
    applications they connected: each grant ends as if revoked, with its
    `connected_app.disconnected` audit entry (listener of apps.workspaces.events.member_removed,
    inside the removal's transaction)."""
    connections = ConnectedApplication.objects.filter(
        user_id=event.user_id, agent__workspace=event.workspace, revoked_at__isnull=True
    ).select_related("grant_key", "agent")
    for connection in connections:
        _revoke(connection)
        _audit(connection, "connected_app.disconnected")


def _is_for(connection: ConnectedApplication, scope: str) -> bool:
    return split_grant_scopes(scope)[0] == connection.agent_id


def resource_token_exchange(
    *, access_token: AccessToken, audience: str
) -> tuple[str, ConnectedApplication]:
    """Exchange a valid OAuth access token for a resource-bound API token: bound to the grant's
    Agent and permissions, to `audience`, and to minutes no later than the access token's
    expiry. Unauthorized when the grant behind the token is gone."""
    agent_id, permissions = split_grant_scopes(access_token.scope)
    connection = (
        ConnectedApplication.objects.filter(
            user_id=access_token.user_id,
            application_id=access_token.application_id,
            agent_id=agent_id or "",
            revoked_at__isnull=True,
        )
        .select_related("grant_key", "agent")
        .first()
    )
    if connection is None or connection.agent.status != Agent.Status.ACTIVE:
        raise Unauthorized("This authorization was revoked or its Agent archived; sign in again.")
    raw, _token = resource_token_sign(
        connection_id=connection.pk,
        grant_key=connection.grant_key,
        scopes=permissions,
        audience=audience,
        not_after=access_token.expires,
    )
    _touch_last_used(connection)
    return raw, connection


def _touch_last_used(connection: ConnectedApplication, now: datetime | None = None) -> None:
    now = now or timezone.now()
    if (
        connection.last_used_at is not None
        and now - connection.last_used_at < LAST_USED_GRANULARITY
    ):
        return
    ConnectedApplication.objects.filter(pk=connection.pk).update(last_used_at=now)
    connection.last_used_at = now


def spent_codes_sweep(*, now: datetime | None = None) -> int:
    """Forget exchanged authorization codes once every token issued from them has expired: a
    replay after that has nothing left to revoke. Returns how many were forgotten."""
    lifetime = timedelta(seconds=oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS)
    cutoff = (now or timezone.now()) - lifetime
    deleted, _ = SpentAuthorizationCode.objects.filter(created_at__lt=cutoff).delete()
    return deleted
