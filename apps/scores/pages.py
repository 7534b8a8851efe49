"""Console pages for scores: the Scores page (every score, filters, bulk delete, score configs),
the scores panel beside a run, a conversation and its messages (add from the Agent's configs,
remove), and the Overview's scores over time. Owners and members alike.

Thin: the same selectors and services as the API. The panel and the Overview's charts are
fragments the activity pages load with HTMX (activity knows only their URLs)."""

from datetime import UTC, date, datetime, timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from apps.common import charts
from apps.common.errors import BadRequest, ServiceError
from apps.common.keyset import paginate
from apps.scores import selectors, services
from apps.scores.forms import ScoreAddForm, ScoreConfigForm, ScoreFilterForm
from apps.scores.models import FEEDBACK_NAME, DataType, Score, Source, TargetType
from apps.workspaces.console import (
    ConsoleRequest,
    RowNoun,
    bounded_count,
    bulk_confirm,
    bulk_ticked,
    console_view,
    keyset_page,
    render_page,
)

PAGE_SIZE = 50
SCORES = RowNoun("score", "scores")
CATEGORY_COLOURS = ("#12b76a", "#f04438", "#2e90fa", "#f79009", "#7a5af8", "#667085", "#ee46bc")


def _back(request: ConsoleRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return fallback


# --- The Scores page -----------------------------------------------------------------------------


@console_view
def score_list(request: ConsoleRequest) -> HttpResponse:
    form = ScoreFilterForm(request.GET)
    filters, error = {}, None
    if form.is_valid():
        filters = {name: value for name, value in form.cleaned_data.items() if value}
    else:
        error = " ".join(str(message) for errors in form.errors.values() for message in errors)
    try:
        queryset = selectors.score_list(agent=request.agent, filters=filters)
        page, page_error = keyset_page(
            request,
            lambda wanted: paginate(queryset, keyset=selectors.SCORE_KEYSET, page=wanted),
            limit=PAGE_SIZE,
        )
        count = bounded_count(queryset)
    except BadRequest as exc:
        queryset = selectors.score_list(agent=request.agent)
        page, page_error = keyset_page(
            request,
            lambda wanted: paginate(queryset.none(), keyset=selectors.SCORE_KEYSET, page=wanted),
            limit=PAGE_SIZE,
        )
        count, error = bounded_count(queryset.none()), exc.message
    context = {
        "section": "scores",
        "form": form,
        "page": page,
        "count": count,
        "error": error or page_error,
        "filtering": bool(filters),
        "is_first_page": not (request.GET.get("after") or request.GET.get("before")),
        "bulk_actions": [("delete", "Delete", True)],
        "configs": selectors.score_config_list(agent=request.agent, archived=None).order_by(
            "archived_at", "name"
        ),
        "config_form": ScoreConfigForm(),
        "names": selectors.score_names(agent=request.agent),
    }
    return render_page(request, "scores/score_list.html", context, partial="score-table")


@require_POST
@console_view
def score_bulk(request: ConsoleRequest) -> HttpResponse:
    """Delete the ticked scores: first a page saying how many, then (confirm=1) the delete."""
    list_url = reverse("scores:score_list")
    if request.POST.get("action") != "delete":
        messages.error(request, "Choose delete.")
        return redirect(list_url)
    ids = bulk_ticked(request, noun=SCORES, list_url=list_url)
    if isinstance(ids, HttpResponse):
        return ids
    if request.POST.get("confirm") != "1":
        found = Score.objects.filter(agent=request.agent, id__in=ids).only("id", "name")
        rows = {score.id: f"{score.name} = {score.value}" for score in found}
        if not rows:
            messages.error(request, "None of those scores exists any more.")
            return redirect(list_url)
        return bulk_confirm(
            request,
            section="scores",
            action_url=reverse("scores:score_bulk"),
            cancel_url=list_url,
            action="delete",
            label="Delete",
            noun=SCORES,
            consequence="They are deleted for good, with the judgement they record.",
            rows=rows,
            danger=True,
        )
    deleted = services.scores_delete(agent=request.agent, score_ids=ids)
    messages.success(request, f"Deleted {SCORES(deleted)}.")
    return redirect(list_url)


@require_POST
@console_view
def config_create(request: ConsoleRequest) -> HttpResponse:
    form = ScoreConfigForm(request.POST)
    list_url = reverse("scores:score_list") + "#configs"
    if not form.is_valid():
        messages.error(request, " ".join(str(m) for errors in form.errors.values() for m in errors))
        return redirect(list_url)
    try:
        config = services.score_config_create(agent=request.agent, data=form.as_data())
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Score config “{config.name}” created.")
    return redirect(list_url)


@require_POST
@console_view
def config_archive(request: ConsoleRequest, config_id: str) -> HttpResponse:
    archived = request.POST.get("archived", "1") == "1"
    try:
        config = services.score_config_archive(
            agent=request.agent, config_id=config_id, archived=archived
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        verb = "archived" if archived else "restored"
        messages.success(request, f"Score config “{config.name}” {verb}.")
    return redirect(reverse("scores:score_list") + "#configs")


# --- The panel beside a run, a conversation, a message -------------------------------------------


def _panel_context(request: ConsoleRequest, target_type: str, target_id: str) -> dict:
    if target_type == TargetType.RUN:
        scores = selectors.scores_of_run(agent=request.agent, run_id=target_id)
    elif target_type == TargetType.CONVERSATION:
        scores = selectors.scores_of_conversation(agent=request.agent, conversation_id=target_id)
    else:
        raise BadRequest("Scores are shown beside a run or a conversation.")
    configs = list(selectors.score_config_list(agent=request.agent).order_by("name"))
    # Per message: shown beside it in the transcript (out-of-band swaps into its slot).
    by_message: dict[str, list[Score]] = {}
    for score in scores:
        if score.message_id:
            by_message.setdefault(score.message_id, []).append(score)
    # Beside a conversation: its own scores and its runs' (each message's go beside it).
    own = [
        score
        for score in scores
        if target_type == TargetType.RUN or score.target_type != TargetType.MESSAGE
    ]
    feedback = [s for s in scores if s.name == FEEDBACK_NAME and s.source == Source.END_USER]
    return {
        "target_type": target_type,
        "target_id": target_id,
        "scores": own,
        "by_message": by_message,
        "configs": configs,
        "form": ScoreAddForm(configs=configs),
        "thumbs_up": sum(1 for s in feedback if s.boolean_value),
        "thumbs_down": sum(1 for s in feedback if s.boolean_value is False),
        "panel_url": f"{reverse('scores:score_panel')}?"
        + urlencode({"target_type": target_type, "target_id": target_id}),
    }


@require_GET
@console_view
def score_panel(request: ConsoleRequest) -> HttpResponse:
    """The scores of a run (its own, its steps' and messages') or of a conversation (with each
    message's beside it), and the form to add one. Opened as a page, it is the Scores list
    filtered to the target."""
    target_type = request.GET.get("target_type", "")
    target_id = request.GET.get("target_id", "")[:64]
    if not request.htmx:
        key = "run_id" if target_type == TargetType.RUN else "conversation_id"
        return redirect(f"{reverse('scores:score_list')}?{urlencode({key: target_id})}")
    context = _panel_context(request, target_type, target_id)
    return render(request, "scores/_panel.html", context)


@require_POST
@console_view
def score_add(request: ConsoleRequest) -> HttpResponse:
    """A score given by an owner or member on a run, a message or a conversation, from the
    form built from the Agent's score configs (free-form names too)."""
    configs = list(selectors.score_config_list(agent=request.agent))
    form = ScoreAddForm(request.POST, configs=configs)
    panel_type = request.POST.get("panel_type", TargetType.RUN)
    panel_id = request.POST.get("panel_id", "")[:64]
    fallback = reverse("scores:score_list")
    error = None
    if not form.is_valid():
        error = " ".join(str(m) for errors in form.errors.values() for m in errors)
    else:
        try:
            batch = services.scores_parse(form.as_item())
            services.scores_create(
                agent=request.agent,
                scores=batch,
                source=Source.CONSOLE,
                author={"created_by_id": request.user.pk},
            )
        except ServiceError as exc:
            error = exc.message.removeprefix("score.")
    if request.htmx and panel_id:
        context = _panel_context(request, panel_type, panel_id)
        context["error"] = error
        if error:
            context["form"] = form
        return render(request, "scores/_panel.html", context)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, "Score added.")
    return redirect(_back(request, fallback))


@require_POST
@console_view
def score_remove(request: ConsoleRequest, score_id: str) -> HttpResponse:
    error = None
    try:
        services.score_delete(agent=request.agent, score_id=score_id)
    except ServiceError as exc:
        error = exc.message
    panel_type = request.POST.get("panel_type", "")
    panel_id = request.POST.get("panel_id", "")[:64]
    if request.htmx and panel_id:
        context = _panel_context(request, panel_type, panel_id)
        context["error"] = error
        return render(request, "scores/_panel.html", context)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, "Score removed.")
    return redirect(_back(request, reverse("scores:score_list")))


# --- The Overview's scores over time -------------------------------------------------------------


def _day(raw: str | None, default: date) -> date:
    try:
        return date.fromisoformat(raw) if raw else default
    except ValueError:
        return default


@require_GET
@console_view
def score_overview(request: ConsoleRequest) -> HttpResponse:
    """Per score name and day of the Overview's period: the average of numeric scores, the
    counts per category (or thumbs up / down) stacked; a day's bar opens the runs behind it."""
    today = datetime.now(UTC).date()
    last = _day(request.GET.get("to"), today)
    first = _day(request.GET.get("from"), last - timedelta(days=13))
    if first > last or (last - first).days > 366:
        first, last = last - timedelta(days=13), last
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    runs_list = reverse("activity:run_list")
    panels = []
    for series in selectors.score_series(agent=request.agent, first_day=first, last_day=last):

        def link(day: date, name: str = series.name, value: str = "") -> str:
            query = {"agent": request.agent.pk, "score": name, "from": day.isoformat()}
            query["to"] = day.isoformat()
            if value:
                query["score_value"] = value
            return f"{runs_list}?{urlencode(query)}"

        links = [link(day) for day in days]
        if series.data_type == DataType.NUMERIC:
            averages = [series.days.get(day, {}).get("average") for day in days]
            chart = charts.lines(
                days,
                {"average": averages},
                f"{series.name}: average per day",
                unit="",
                links=links,
                decimals=2,
            )
            legend = [("average", "#2e90fa")]
        else:
            categories = sorted(
                {c for entry in series.days.values() for c in entry.get("shares", {})}
            )
            if series.data_type == DataType.BOOLEAN:
                categories = [c for c in ("true", "false") if c in categories]
            counts = {
                category: [
                    round(
                        series.days.get(day, {}).get("shares", {}).get(category, 0)
                        * series.days.get(day, {}).get("count", 0)
                    )
                    for day in days
                ]
                for category in categories
            }
            colours = {
                category: (
                    {"true": "#12b76a", "false": "#f04438"}.get(category)
                    or CATEGORY_COLOURS[index % len(CATEGORY_COLOURS)]
                )
                for index, category in enumerate(categories)
            }
            if series.data_type == DataType.BOOLEAN:
                # A day's bar opens that day's runs with the worse answer first in mind.
                links = [link(day, value="false") for day in days]
            chart = charts.stacked_bars(
                days,
                counts,
                f"{series.name}: share per day",
                colours=colours,
                links=links,
                unit="scores",
            )
            legend = list(colours.items())
        panels.append({"series": series, "chart": chart, "legend": legend})
    context = {"panels": panels, "first": first, "last": last}
    return render(request, "scores/_overview.html", context)
