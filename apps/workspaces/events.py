"""Announcements of team changes, so feature apps can react without workspaces knowing them.

`member_removed` is announced inside the removal's transaction, after the member's API keys are
revoked: a feature app that holds credentials acting as a person (apps.mcp_server's connected
applications) ends them there, so they commit or roll back with the removal. Listeners must not
do network I/O.
"""

from dataclasses import dataclass

from apps.common.events import Announcement
from apps.workspaces.models import Workspace


@dataclass(frozen=True)
class MemberRemoved:
    workspace: Workspace
    # The person who left or was removed (a user row: it still exists).
    user_id: int
    # Who removed them; the same person when they left; None for an operator.
    by_user_id: int | None


member_removed: Announcement[MemberRemoved] = Announcement()
on_member_removed = member_removed.listen
announce_member_removed = member_removed.announce
