"""The Data retention page: owners choose how long the workspace keeps its activity."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.retention import services
from apps.retention.forms import FOREVER, RetentionForm
from apps.workspaces.console import ConsoleRequest, console_view

TEMPLATE = "retention/retention.html"


@require_http_methods(["GET", "POST"])
@console_view(owner_required=True)
def retention_settings(request: ConsoleRequest) -> HttpResponse:
    days = services.retention_days(workspace=request.workspace)
    if request.method == "POST":
        form = RetentionForm(request.POST)
        if form.is_valid():
            days = form.activity_days()
            services.retention_policy_set(workspace=request.workspace, activity_days=days)
            messages.success(
                request,
                f"Activity is now kept {days} days." if days else "Activity is now kept forever.",
            )
            return redirect("retention:retention_settings")
        status = 400
    else:
        form = RetentionForm(initial={"activity": str(days) if days else FOREVER})
        status = 200
    context = {"section": "retention", "form": form, "days": days}
    return render(request, TEMPLATE, context, status=status)
