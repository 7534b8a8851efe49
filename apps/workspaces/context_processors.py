from django.http import HttpRequest

from apps.workspaces.console import navigation


def console(request: HttpRequest) -> dict:
    """Navigation and the current Agent for the console layout."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {
        "nav_items": navigation(is_owner=getattr(request, "is_owner", False)),
        "current_agent": getattr(request, "agent", None),
        "console_agents": getattr(request, "console_agents", []),
        "is_owner": getattr(request, "is_owner", False),
    }
