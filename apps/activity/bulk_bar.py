"""The buttons of the bulk bar above the Conversations, Users and Runs lists, for the signed-in
role (apps.activity.list_actions does what they ask)."""

from django.urls import reverse

OWNER_ACTIONS = frozenset({"delete_data"})


def bulk_actions(name: str, *, is_owner: bool) -> list[tuple]:
    """The bulk bar's buttons on list `name` for this role: (value, label, danger, url, asks)."""
    actions: list[tuple] = [
        ("export_csv", "Export CSV", False, "", False),
        ("export_json", "Export JSON", False, "", False),
    ]
    if name == "runs":
        actions += [("tag_add", "Add tag", False, "", False)]
        actions += [("tag_remove", "Remove tag", False, "", False)]
    if name in ("runs", "conversations"):
        actions += [("score", "Score", False, reverse("scores:score_bulk_add"), True)]
    if name == "users" and is_owner:
        actions += [("delete_data", "Delete their data", True, "", True)]
    return actions
