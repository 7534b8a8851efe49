"""A run's steps to what the run page draws: a waterfall (rows in tree order, bars to scale) and,
per step, its input and output as a collapsible JSON tree.

Everything a step holds came from the runtime, so it is attacker-controlled: the JSON tree is
built here with every key and value escaped, links are kept only for http(s) URLs (as in the
transcript), and nothing is ever rendered as markup of its own.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from apps.activity.models import RunStep
from apps.activity.transcript import safe_url
from apps.common.durations import duration_text

# Width of the bar chart's coordinate space: bars are <rect>s in a viewBox this wide (SVG
# attributes, not inline styles, which the Content-Security-Policy refuses).
SCALE = 1000
MAX_DEPTH_CLASS = 12
SHORT_TEXT = 400  # characters of a string shown before "show all"
MAX_TREE_NODES = 3000


@dataclass
class StepRow:
    step: RunStep
    depth: int
    x: float  # bar start, 0..SCALE
    width: float  # bar width, at least one unit so an instant step stays visible
    offset_ms: float | None

    @property
    def depth_class(self) -> str:
        return f"depth-{min(self.depth, MAX_DEPTH_CLASS)}"


@dataclass
class Waterfall:
    rows: list[StepRow]
    total_ms: float
    truncated: bool
    # Steps that started long after the run ended (a late search naming the run): drawn in a
    # lane of their own, to their own scale, so they do not squeeze the run's bars to slivers.
    late_rows: list[StepRow] = field(default_factory=list)
    late_total_ms: float = 0.0
    late_after_ms: float = 0.0  # from the run's end to the first late step


# A step is "after the run" when it starts this long after the run's end (and at least half
# the run's own length after it): a straggler recorded seconds late stays on the main axis.
LATE_AFTER = timedelta(seconds=5)


def _end(step: RunStep) -> datetime:
    if step.ended_at is not None:
        return step.ended_at
    if step.duration_ms is not None:
        return step.started_at + timedelta(milliseconds=step.duration_ms)
    return step.started_at


def _rows(steps: list[RunStep], start: datetime) -> tuple[list[StepRow], float]:
    """Rows in tree order (each step under its parent, siblings by start), bars to scale from
    `start` to the last step's end."""
    ids = {step.id for step in steps}
    children: dict[str | None, list[RunStep]] = {}
    for step in steps:  # already in start order
        parent = step.parent_id if step.parent_id in ids else None
        children.setdefault(parent, []).append(step)
    end = max(_end(step) for step in steps)
    total_ms = max((end - start).total_seconds() * 1000, 0.001)
    rows: list[StepRow] = []
    # Depth-first without recursion: a deep tree must not exhaust Python's stack.
    stack: list[tuple[RunStep, int]] = [(step, 0) for step in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        step, depth = stack.pop()
        if step.id in seen:
            continue
        seen.add(step.id)
        offset = (step.started_at - start).total_seconds() * 1000
        duration = max((_end(step) - step.started_at).total_seconds() * 1000, 0.0)
        x = offset / total_ms * SCALE
        width = max(duration / total_ms * SCALE, 2.0)
        rows.append(StepRow(step=step, depth=depth, x=round(min(x, SCALE - 2), 2),
                            width=round(min(width, SCALE - x), 2) if x < SCALE else 2.0,
                            offset_ms=offset))  # fmt: skip
        stack.extend((child, depth + 1) for child in reversed(children.get(step.id, [])))
    # Steps in a parent cycle (never reached from a top-level step) still get a row.
    rows.extend(
        StepRow(step=step, depth=0, x=0.0, width=2.0, offset_ms=None)
        for step in steps
        if step.id not in seen
    )
    return rows, total_ms


def waterfall(
    steps: list[RunStep],
    *,
    limit: int,
    run_start: datetime | None = None,
    run_end: datetime | None = None,
) -> Waterfall:
    """Rows in tree order, bars to scale; steps that started well after `run_end` go to a
    separate "after the run" lane with its own scale."""
    truncated = len(steps) > limit
    steps = steps[:limit]
    if not steps:
        return Waterfall(rows=[], total_ms=0.0, truncated=False)
    start = min(step.started_at for step in steps)
    if run_start is not None and run_start < start:
        start = run_start
    late: list[RunStep] = []
    if run_end is not None and run_end >= start:
        cutoff = run_end + max(LATE_AFTER, (run_end - start) / 2)
        late = [step for step in steps if step.started_at > cutoff]
        steps = [step for step in steps if step.started_at <= cutoff]
    if not steps:  # every step late: one lane, drawn as usual
        steps, late = late, []
    rows, total_ms = _rows(steps, start)
    if not late:
        return Waterfall(rows=rows, total_ms=total_ms, truncated=truncated)
    late_start = min(step.started_at for step in late)
    late_rows, late_total_ms = _rows(late, late_start)
    assert run_end is not None
    return Waterfall(
        rows=rows,
        total_ms=total_ms,
        truncated=truncated,
        late_rows=late_rows,
        late_total_ms=late_total_ms,
        late_after_ms=(late_start - run_end).total_seconds() * 1000,
    )


# --- The JSON tree -----------------------------------------------------------------------------


class _Budget:
    def __init__(self, nodes: int) -> None:
        self.nodes = nodes


def _scalar(value) -> str:
    if value is None:
        return '<span class="json-null">null</span>'
    if isinstance(value, bool):
        return f'<span class="json-bool">{"true" if value else "false"}</span>'
    if isinstance(value, int | float):
        return f'<span class="json-number">{escape(repr(value))}</span>'
    text = str(value)
    if len(text) <= SHORT_TEXT:
        return f'<span class="json-string">{escape(text)}</span>'
    return (
        f'<span class="json-string">{escape(text[:SHORT_TEXT])}…</span>'
        f'<details class="show-all"><summary>show all ({len(text):,} characters)</summary>'
        f'<pre class="json-full">{escape(text)}</pre></details>'
    )


# Levels of a step's input or output shown open: a chat's messages and each message's fields,
# rather than a tree collapsed at every level below the top (issue 38, defect 8).
OPEN_LEVELS = 3


def _tree(value, budget: _Budget, *, open_: bool, depth: int = 0) -> str:
    budget.nodes -= 1
    if budget.nodes < 0:
        return '<span class="muted">…</span>'
    if isinstance(value, dict):
        items = value.items()
        label = f"{{{len(value)} keys}}" if len(value) != 1 else "{1 key}"
    elif isinstance(value, list):
        items = enumerate(value)  # type: ignore[assignment]
        label = f"[{len(value)} items]" if len(value) != 1 else "[1 item]"
    else:
        return _scalar(value)
    if not value:
        return '<span class="json-empty">{}</span>' if isinstance(value, dict) else "[]"
    parts = [f'<details class="json-node"{" open" if open_ else ""}><summary>{label}</summary><ul>']
    for key, child in items:
        if budget.nodes < 0:
            parts.append('<li class="muted">…</li>')
            break
        parts.append(
            f'<li><span class="json-key">{escape(str(key))}</span>: '
            f"{_tree(child, budget, open_=depth + 1 < OPEN_LEVELS, depth=depth + 1)}</li>"
        )
    parts.append("</ul></details>")
    return "".join(parts)


def json_tree(value) -> SafeString:
    """A collapsible, inert HTML tree of a JSON value (its first OPEN_LEVELS levels open)."""
    return mark_safe(_tree(value, _Budget(MAX_TREE_NODES), open_=True))  # noqa: S308 - escaped above


def documents_view(documents: list) -> list[dict]:
    """Retrieved passages with a safe link: our document's page, else its http(s) URL."""
    out = []
    for document in documents if isinstance(documents, list) else []:
        if not isinstance(document, dict):
            continue
        out.append(
            {
                "document_id": document.get("document_id"),
                "title": document.get("title") or document.get("document_id") or "document",
                "url": safe_url(document.get("url")),
                "passage": document.get("passage") or "",
                "score": document.get("score"),
            }
        )
    return out


# --- The waterfall's rows ------------------------------------------------------------------------
# Written here rather than in a template loop: 500 rows through Django's template engine cost
# most of the page's time budget (benchmarks/run_page.py); every recorded value is escaped.

_KIND_LABELS = dict(RunStep.Kind.choices)


def _credits(value: float) -> str:
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return text or "0"


def _meta(step: RunStep) -> str:
    parts = [
        f'<span class="step-duration">{duration_text(step.duration_ms)}</span>'
        if step.duration_ms is not None
        else f'<span class="step-duration">{escape(step.status)}</span>'
    ]
    if step.kind == RunStep.Kind.MODEL:
        parts.append(escape(step.model_id or "model"))
        if step.total_tokens is not None:
            parts.append(f'<span class="step-tokens">{step.total_tokens} tokens</span>')
        if step.credits_charged is not None:
            parts.append(f"{_credits(step.credits_charged)} credits")
    elif step.kind == RunStep.Kind.TOOL and step.tool_name:
        server = f" ({escape(step.mcp_server)})" if step.mcp_server else ""
        parts.append(f"{escape(step.tool_name)}{server}")
    elif step.kind == RunStep.Kind.RETRIEVAL:
        count = len(step.documents) if isinstance(step.documents, list) else 0
        parts.append(f"{count} passage{'' if count == 1 else 's'}")
    return " · ".join(parts)


def rows_html(rows: list[StepRow], *, step_url: str) -> SafeString:
    """The waterfall's <li> rows; `step_url` has `__step__` where a step's id goes."""
    out = []
    for row in rows:
        step = row.step
        failed = step.status == RunStep.Status.FAILED
        url = escape(step_url.replace("__step__", step.id))
        error = ""
        if failed:
            text = (step.error or "")[:120] + ("…" if step.error and len(step.error) > 120 else "")
            error = f' <span class="step-error" role="note">failed{": " + escape(text) if text else ""}</span>'
        out.append(
            f'<li class="trace-row {row.depth_class}{" step-failed" if failed else ""}" '
            f'data-step-id="{escape(step.id)}" data-kind="{escape(step.kind)}">'
            f'<details hx-get="{url}" hx-trigger="toggle once" hx-target="find .step-body" '
            f'hx-swap="innerHTML"><summary><span class="step-name"><span class="kind '
            f'kind-{escape(step.kind)}">{escape(_KIND_LABELS.get(step.kind, step.kind))}</span> '
            f"{escape(step.name)}{error}</span>"
            f'<span class="step-meta small muted">{_meta(step)}</span>'
            f'<svg class="step-bar" viewBox="0 0 {SCALE} 10" preserveAspectRatio="none" '
            f'aria-hidden="true"><rect x="{row.x}" y="1" width="{row.width}" height="8" rx="1"/>'
            f'</svg></summary><div class="step-body"><p class="muted small"><a href="{url}">'
            f"Open the step</a></p></div></details></li>"
        )
    return mark_safe("".join(out))  # noqa: S308 - every recorded value is escaped above
