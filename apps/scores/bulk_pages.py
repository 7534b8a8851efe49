"""Scoring the ticked rows of the Runs or Conversations list (their bulk bar's "Score…").

The bar posts the ticked ids here: a page asks for the score (one of the Agent's score configs,
or a free-form name) and its value, naming the rows it goes on; its form posts back with
`confirm=1` and every score is recorded at once by `scores_create`, all or nothing, checked
against the config as the API checks it (a refused value names the rule, nothing is written).
"""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.activity.models import Conversation, Run
from apps.common.errors import ServiceError
from apps.scores import selectors, services
from apps.scores.forms import ScoreAddForm
from apps.scores.models import Source, TargetType
from apps.workspaces.console import (
    ConsoleRequest,
    RowNoun,
    bulk_return,
    bulk_ticked,
    console_view,
)

# What can be scored from a list: its rows' model, their noun and the list they are ticked on.
TARGETS: dict[str, tuple] = {
    TargetType.RUN: (Run, RowNoun("run", "runs"), "activity:run_list"),
    TargetType.CONVERSATION: (
        Conversation,
        RowNoun("conversation", "conversations"),
        "activity:conversation_list",
    ),
}


def _record(request: ConsoleRequest, target_type: str, ids: list[str], form: ScoreAddForm):
    """Every ticked row's score, at once; the message to show when refused, else None."""
    items = []
    for row_id in ids:
        one = ScoreAddForm(
            {**form.cleaned_data, "target_type": target_type, "target_id": row_id},
            configs=list(form.configs.values()),
        )
        one.is_valid()
        items.append(one.as_item())
    try:
        services.scores_create(
            agent=request.agent,
            scores=services.scores_parse(items),
            source=Source.CONSOLE,
            author={"created_by_id": request.user.pk},
        )
    except ServiceError as exc:
        return exc.message
    return None


@require_POST
@console_view
def score_bulk_add(request: ConsoleRequest) -> HttpResponse:
    """Score the ticked runs or conversations: the form first, then (confirm=1) the scores."""
    target_type = request.POST.get("target_type", "")
    if target_type not in TARGETS:
        messages.error(request, "Scores from a list go on runs or conversations.")
        return redirect(reverse("scores:score_list"))
    model, noun, list_name = TARGETS[target_type]
    back = bulk_return(request, reverse(list_name))
    ids = bulk_ticked(request, noun=noun, list_url=back)
    if isinstance(ids, HttpResponse):
        return ids
    found = model.objects.filter(agent=request.agent, id__in=ids)  # type: ignore[attr-defined]
    rows = {row.id: str(row) if model is Conversation else row.id for row in found}
    if not rows:
        messages.error(request, f"None of those {noun.plural} exists any more.")
        return redirect(back)
    configs = list(selectors.score_config_list(agent=request.agent).order_by("name"))
    error = None
    form = ScoreAddForm(configs=configs)
    if request.POST.get("confirm") == "1":
        data = {**request.POST.dict(), "target_id": next(iter(rows))}
        form = ScoreAddForm(data, configs=configs)
        if not form.is_valid():
            error = " ".join(str(m) for errors in form.errors.values() for m in errors)
        else:
            error = _record(request, target_type, list(rows), form)
            if error is None:
                value = form.cleaned_data["value"].strip()
                name = form.cleaned_data["name"].strip()
                messages.success(request, f"Scored {noun(len(rows))}: {name} = {value}.")
                return redirect(back)
    context = {
        "section": "runs" if target_type == TargetType.RUN else "conversations",
        "target_type": target_type,
        "question": f"Score {noun(len(rows))}",
        "names": list(rows.values()),
        "ids": list(rows),
        "configs": configs,
        "form": form,
        "error": error,
        "back": back,
    }
    return render(request, "scores/bulk_score.html", context, status=400 if error else 200)
