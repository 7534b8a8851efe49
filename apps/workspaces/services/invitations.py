"""Invitations to a workspace's team: creating one (a one-time link, e-mailed when it names an
address), revoking it, checking a link, and accepting it with an account or a new one."""

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from apps.common.errors import BadRequest, Conflict, NotFound
from apps.workspaces.audit import actor_for_user, audit_record
from apps.workspaces.models import Invitation, Membership, Workspace
from apps.workspaces.rendering import person_name
from apps.workspaces.services.team_checks import (
    _audit_member,
    _lock_workspace,
    _owner_check,
    _role_check,
)

logger = logging.getLogger(__name__)


MAX_EMAIL_LENGTH = 254  # Invitation.email
MAX_SIGN_IN_NAME_LENGTH = 150  # a user's username, which is their address


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class InvitationCreated:
    invitation: Invitation
    # The one-time link, shown once: only its token's hash is stored.
    link: str
    # With an address: whether the e-mail went out, and why not.
    email_sent: bool
    email_error: str | None


def invitation_create(
    *, workspace: Workspace, by_user, role: str, email: str = "", site_url: str
) -> InvitationCreated:
    """Invite someone to `workspace` with `role`: a one-time link that expires after
    TEAM_INVITATION_DAYS, sent by e-mail when `email` is given. Inviting an address that has
    an open invitation replaces it (the old link stops working); an address that is already a
    member's is a Conflict. `site_url` (scheme and host) makes the link absolute."""
    role = _role_check(role)
    email = (email or "").strip().lower()
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise BadRequest("email: enter a valid e-mail address, or leave it empty.") from None
        if len(email) > MAX_EMAIL_LENGTH:
            raise BadRequest(f"email: at most {MAX_EMAIL_LENGTH} characters.")
    with transaction.atomic():
        _lock_workspace(workspace)
        _owner_check(workspace=workspace, by_user=by_user)
        if (
            email
            and Membership.objects.filter(workspace=workspace, user__email__iexact=email).exists()
        ):
            raise Conflict(f"{email} is already a member of this workspace.")
        now = timezone.now()
        if email:  # one open invitation per address: the new one replaces the old
            _invitations_revoke(_open_invitations(workspace).filter(email=email), now=now)
        token = secrets.token_urlsafe(32)
        invitation = Invitation.objects.create(
            workspace=workspace,
            email=email,
            role=role,
            token_hash=_hash_token(token),
            created_by=by_user,
            created_at=now,
            expires_at=now + timedelta(days=settings.TEAM_INVITATION_DAYS),
        )
        _audit_invitation(invitation, "member.invited", changes={"role": role})
    link = site_url.rstrip("/") + reverse("workspaces:invitation_accept", args=[token])
    sent, error = (
        _send_invitation(invitation, link=link, by_user=by_user) if email else (False, None)
    )
    return InvitationCreated(invitation=invitation, link=link, email_sent=sent, email_error=error)


def _send_invitation(invitation: Invitation, *, link: str, by_user) -> tuple[bool, str | None]:
    """The invitation e-mail through Django's mail API. A mail server that refuses is reported
    to the owner (who still has the link to send), not an error: the invitation stands."""
    inviter = person_name(by_user) if by_user is not None else "An administrator"
    workspace = invitation.workspace.name
    body = (
        f"{inviter} invited you to join the workspace “{workspace}” on the Agent console "
        f"as {invitation.get_role_display().lower()}.\n\n"
        f"Accept the invitation: {link}\n\n"
        f"The link works once and expires on {invitation.expires_at:%Y-%m-%d %H:%M} UTC. "
        "If you did not expect it, ignore this e-mail."
    )
    try:
        send_mail(
            f"You are invited to {workspace}", body, None, [invitation.email], fail_silently=False
        )
    except Exception as exc:  # SMTP refusal, unreachable server, bad configuration
        logger.warning("invitation e-mail to %s not sent: %r", invitation.email, exc)
        return False, "The e-mail could not be sent; copy the link and send it yourself."
    return True, None


def _open_invitations(workspace: Workspace):
    return Invitation.objects.filter(
        workspace=workspace, accepted_at__isnull=True, revoked_at__isnull=True
    )


def invitation_revoke(*, workspace: Workspace, invitation_id: str, by_user) -> Invitation:
    """The link stops working at once. An accepted or already revoked invitation is a
    Conflict; an expired one can still be revoked (it then leaves the list)."""
    _owner_check(workspace=workspace, by_user=by_user)
    invitation = Invitation.objects.filter(workspace=workspace, pk=invitation_id).first()
    if invitation is None:
        raise NotFound("No such invitation.")
    with transaction.atomic():
        revoked = Invitation.objects.filter(
            pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True
        ).update(revoked_at=timezone.now())
        invitation.refresh_from_db()
        if not revoked:
            raise Conflict(f"This invitation was already {invitation.status}.")
        _audit_invitation(invitation, "member.invitation_revoked")
    return invitation


def _invitations_revoke(invitations, *, now=None) -> int:
    """Revoke these open invitations, each with its `member.invitation_revoked` entry (as if
    revoked by hand); how many."""
    revoked = list(invitations.select_for_update())
    if revoked:
        Invitation.objects.filter(pk__in=[invitation.pk for invitation in revoked]).update(
            revoked_at=now or timezone.now()
        )
    for invitation in revoked:
        _audit_invitation(invitation, "member.invitation_revoked")
    return len(revoked)


def _audit_invitation(invitation: Invitation, action: str, **extra) -> None:
    # The address (or "link"), never the link itself: whoever holds it may join.
    audit_record(
        workspace_id=invitation.workspace_id,
        action=action,
        target_type="invitation",
        target_id=invitation.pk,
        target_name=invitation.email or "link invitation",
        **extra,
    )


def invitation_check(invitation: Invitation | None) -> Invitation:
    """The invitation a link names if it can still be accepted, or the error that says why
    not (the page shows it before anyone signs in or creates an account)."""
    if invitation is None:
        raise NotFound("This invitation link is not valid. Ask the workspace owner for a new one.")
    if invitation.status == "accepted":
        raise Conflict("This invitation has already been used. Ask the owner for a new one.")
    if invitation.status == "revoked":
        raise Conflict("This invitation was revoked by the workspace owner.")
    if invitation.status == "expired":
        raise Conflict("This invitation has expired. Ask the workspace owner for a new one.")
    return invitation


def invitation_by_token(token: str) -> Invitation | None:
    return (
        Invitation.objects.select_related("workspace", "created_by")
        .filter(token_hash=_hash_token(token))
        .first()
    )


def invitation_accept(*, token: str, user) -> Membership:
    """`user` joins the workspace with the invitation's role, and the link is spent. An
    invitation for an address needs an account of that address."""
    with transaction.atomic():
        invitation = invitation_check(
            Invitation.objects.select_for_update()
            .select_related("workspace")
            .filter(token_hash=_hash_token(token))
            .first()
        )
        if invitation.email and invitation.email.lower() != (user.email or "").lower():
            raise Conflict(
                f"This invitation is for {invitation.email}; you are signed in as "
                f"{user.email or user.get_username()}. Sign in with that address to accept it."
            )
        if Membership.objects.filter(workspace=invitation.workspace, user=user).exists():
            raise Conflict(f"You are already a member of {invitation.workspace.name}.")
        try:
            with transaction.atomic():
                membership = Membership.objects.create(
                    workspace=invitation.workspace, user=user, role=invitation.role
                )
        except IntegrityError:  # joined meanwhile through another invitation
            raise Conflict(f"You are already a member of {invitation.workspace.name}.") from None
        invitation.accepted_at = timezone.now()
        invitation.accepted_by = user
        invitation.save(update_fields=["accepted_at", "accepted_by"])
        # The person who joins acts (signed in, or just signed up: not yet the request's user).
        _audit_member(
            membership,
            "member.added",
            changes={"role": membership.role, "invitation": invitation.pk},
            actor=actor_for_user(user),
        )
    return membership


def invitation_accept_with_new_account(
    *, token: str, email: str, name: str, password: str
) -> Membership:
    """Create an account (its e-mail is its sign-in name) and accept the invitation with it, in
    one transaction: a dead link or a refused password creates nothing. An invitation to an
    address makes an account of that address (`email` may be left empty); another address is
    refused, never silently replaced: the person would otherwise sign in next time with an
    address they did not type."""
    email = (email or "").strip().lower()
    name = (name or "").strip()
    with transaction.atomic():
        invitation = invitation_check(invitation_by_token(token))
        if invitation.email:
            if email and email != invitation.email.lower():
                raise BadRequest(
                    f"email: this invitation is for {invitation.email}, so the account is "
                    f"created with that address. To join as {email[:100]}, ask the "
                    "workspace owner to invite that address."
                )
            email = invitation.email
        try:
            validate_email(email)
        except ValidationError:
            raise BadRequest("email: enter a valid e-mail address.") from None
        if len(email) > MAX_SIGN_IN_NAME_LENGTH:
            # The address is the account's sign-in name (Django's username, 150 at most).
            raise BadRequest(
                f"email: an address of at most {MAX_SIGN_IN_NAME_LENGTH} characters, please."
            )
        if not name or len(name) > 150:
            raise BadRequest("name: enter your name (up to 150 characters).")
        users = get_user_model().objects
        if users.filter(Q(username__iexact=email) | Q(email__iexact=email)).exists():
            raise Conflict(f"An account for {email} exists already: sign in to accept.")
        user = users.model(username=email, email=email, first_name=name)
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise BadRequest("password: " + " ".join(exc.messages)) from None
        user.set_password(password)
        user.save()
        return invitation_accept(token=token, user=user)
