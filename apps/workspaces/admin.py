"""`/admin/` for staff: find any workspace, person, Agent, key or invitation across tenants, and
act through the same services as the console.

Every tenancy model is read-only here: a change made by editing a row would skip the rules
(last owner, key revocation on removal, the key cache) and the audit trail, so the changes
staff may make are admin actions that call a service. Secrets never show: an API key's
`secret_hash` and an invitation's `token_hash` are not among the displayed fields.
"""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from apps.common.errors import ServiceError
from apps.workspaces.models import Agent, ApiKey, Invitation, Membership, Workspace
from apps.workspaces.services import (
    api_key_revoke,
    invitation_revoke,
    member_remove,
    member_role_change,
    person_offboard,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Staff look; services change."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


def _each(request: HttpRequest, rows, action, *, done: str) -> None:
    """Run a one-row service on each selected row, and say what it did and what it refused."""
    count, refused = 0, []
    for row in rows:
        try:
            action(row)
        except ServiceError as exc:
            refused.append(f"{row}: {exc.message}")
        else:
            count += 1
    messages.success(request, f"{done}: {count}.")
    for text in refused:
        messages.warning(request, text)


class MembershipInline(admin.TabularInline):
    model = Membership
    fields = ("user", "role", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Workspace)
class WorkspaceAdmin(ReadOnlyAdmin):
    list_display = (
        "name",
        "id",
        "member_count",
        "agent_count",
        "monthly_credit_limit",
        "created_at",
    )
    search_fields = ("name", "id", "memberships__user__email")
    date_hierarchy = "created_at"
    inlines = [MembershipInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (
            super()
            .get_queryset(request)
            .annotate(
                member_total=Count("memberships", distinct=True),
                agent_total=Count("agents", distinct=True),
            )
        )

    @admin.display(description="Members", ordering="member_total")
    def member_count(self, workspace) -> int:
        return workspace.member_total

    @admin.display(description="Agents", ordering="agent_total")
    def agent_count(self, workspace) -> int:
        return workspace.agent_total


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    list_display = ("user", "workspace", "role", "created_at")
    list_filter = ("role",)
    search_fields = ("user__email", "user__username", "workspace__name", "workspace__id")
    list_select_related = ("user", "workspace")
    actions = ("make_owner", "make_member", "remove")

    @admin.action(description="Make the selected people owners")
    def make_owner(self, request: HttpRequest, queryset: QuerySet) -> None:
        _each(request, queryset, lambda m: _role(m, Membership.Role.OWNER), done="Made owners")

    @admin.action(description="Make the selected people members")
    def make_member(self, request: HttpRequest, queryset: QuerySet) -> None:
        _each(request, queryset, lambda m: _role(m, Membership.Role.MEMBER), done="Made members")

    @admin.action(description="Remove from their workspace (revokes the keys they created)")
    def remove(self, request: HttpRequest, queryset: QuerySet) -> None:
        _each(
            request,
            queryset,
            lambda m: member_remove(workspace=m.workspace, membership_id=m.pk, by_user=None),
            done="Removed",
        )


def _role(membership: Membership, role: str) -> None:
    member_role_change(
        workspace=membership.workspace, membership_id=membership.pk, role=role, by_user=None
    )


@admin.register(Agent)
class AgentAdmin(ReadOnlyAdmin):
    list_display = ("name", "id", "workspace", "status", "model_id", "revision", "updated_at")
    list_filter = ("status",)
    search_fields = ("name", "id", "workspace__name")
    list_select_related = ("workspace",)
    exclude = ("instructions",)


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    list_display = (
        "name",
        "prefix",
        "agent",
        "kind",
        "key_status",
        "created_by",
        "created_at",
        "last_used_at",
        "expires_at",
    )
    list_filter = ("kind", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = (
        "name",
        "lookup_id",
        "agent__name",
        "agent__workspace__name",
        "created_by__email",
    )
    list_select_related = ("agent", "created_by")
    # Never the secret's hash.
    fields = (
        "name",
        "prefix",
        "agent",
        "kind",
        "scopes",
        "created_by",
        "parent",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    readonly_fields = fields
    actions = ("revoke",)

    @admin.display(description="Status")
    def key_status(self, key: ApiKey) -> str:
        return key.status

    @admin.action(description="Revoke the selected keys (they stop working at once)")
    def revoke(self, request: HttpRequest, queryset: QuerySet) -> None:
        _each(
            request,
            queryset.filter(kind=ApiKey.Kind.KEY),
            lambda key: api_key_revoke(agent=key.agent, key_id=key.pk, by_user=None),
            done="Revoked",
        )


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdmin):
    list_display = (
        "__str__",
        "workspace",
        "email",
        "role",
        "invitation_status",
        "created_by",
        "created_at",
        "expires_at",
    )
    list_filter = (
        "role",
        ("accepted_at", admin.EmptyFieldListFilter),
        ("revoked_at", admin.EmptyFieldListFilter),
    )
    search_fields = ("email", "workspace__name", "created_by__email")
    list_select_related = ("workspace", "created_by")
    # Never the token's hash.
    fields = (
        "workspace",
        "email",
        "role",
        "created_by",
        "created_at",
        "expires_at",
        "accepted_at",
        "accepted_by",
        "revoked_at",
    )
    readonly_fields = fields
    actions = ("revoke",)

    @admin.display(description="Status")
    def invitation_status(self, invitation: Invitation) -> str:
        return invitation.status

    @admin.action(description="Revoke the selected invitations")
    def revoke(self, request: HttpRequest, queryset: QuerySet) -> None:
        _each(
            request,
            queryset,
            lambda i: invitation_revoke(workspace=i.workspace, invitation_id=i.pk, by_user=None),
            done="Revoked",
        )


User = get_user_model()


class PersonAdmin(UserAdmin):
    """Django's user admin, without deleting: a deleted person's keys would keep working (their
    creator becomes empty). "Offboard" removes them from every workspace (revoking their keys)
    and deactivates the account, which ends their sessions."""

    actions = ("offboard",)

    @admin.action(description="Offboard: remove from every workspace, revoke keys, deactivate")
    def offboard(self, request: HttpRequest, queryset: QuerySet) -> None:
        for person in queryset:
            done = person_offboard(user=person)
            text = (
                f"{person}: left {done.workspaces_left} workspace(s), "
                f"{done.keys_revoked} key(s) revoked"
            )
            if done.refused:
                messages.warning(
                    request,
                    f"{text}; still the last owner of {', '.join(done.refused)}, so the "
                    "account stays active. Make someone else an owner there first.",
                )
            else:
                messages.success(request, f"{text}, account deactivated.")

    list_display = (
        "email",
        "first_name",
        "last_name",
        "is_active",
        "is_staff",
        "last_login",
        "date_joined",
    )

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


admin.site.unregister(User)
admin.site.register(User, PersonAdmin)
admin.site.site_header = "Agent console administration"
admin.site.site_title = "Agent console admin"
admin.site.index_title = "Workspaces, people and credentials"
admin.site.site_url = "/"
