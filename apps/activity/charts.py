"""Server-rendered SVG charts for the Overview: no JavaScript library, no CDN.

Each function returns escaped, self-contained `<svg>` markup with a `<title>` on every bar or
point, which browsers show as a tooltip. Values come from our own aggregates, but every label
still goes through `format_html`/`escape`.
"""

from collections.abc import Sequence
from datetime import date

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

# The plot's own coordinates; the SVG stretches to its box (CSS), so everything drawn in it is a
# shape that may stretch. Axis labels are HTML beside and under it: text never stretches.
WIDTH, HEIGHT = 640, 176
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 0, 0, 1, 0
X_LABELS = 6
STATUS_COLOURS = {
    "completed": "#12b76a",
    "failed": "#f04438",
    "aborted": "#f79009",
    "streaming": "#2e90fa",
}


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def _number(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _x_label_positions(count: int) -> list[int]:
    """At most X_LABELS day indexes, evenly spread from the first day to the last, so the
    labels sit at the ends and evenly between them (the axis row spaces them the same way)."""
    if count <= X_LABELS:
        return list(range(count))
    return [round(j * (count - 1) / (X_LABELS - 1)) for j in range(X_LABELS)]


def _frame(top: float, label: str, days: Sequence[date], inner: Sequence[str]) -> SafeString:
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    parts: list[str] = [
        format_html('<figure class="chart-box" role="img" aria-label="{}">', label),
        format_html(
            '<div class="chart-y" aria-hidden="true"><span>{}</span><span>{}</span>'
            "<span>0</span></div>",
            _number(top),
            _number(top / 2),
        ),
        format_html(
            '<svg class="chart" viewBox="0 0 {} {}" preserveAspectRatio="none">', WIDTH, HEIGHT
        ),
    ]
    for fraction in (0, 0.5, 1):
        y = PAD_TOP + plot_h * (1 - fraction)
        parts.append(
            format_html(
                '<line class="grid-line" x1="0" x2="{}" y1="{}" y2="{}"></line>',
                WIDTH,
                f"{y:.1f}",
                f"{y:.1f}",
            )
        )
    parts.extend(inner)
    parts.append(mark_safe('</svg><div class="chart-x" aria-hidden="true">'))
    # A range over a year shows the year too, so two Januaries are not confused.
    pattern = "%b %d" if len(days) <= 180 else "%b %d, %Y"
    for i in _x_label_positions(len(days)):
        parts.append(format_html("<span>{}</span>", days[i].strftime(pattern)))
    parts.append(mark_safe("</div></figure>"))
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped


def stacked_bars(days: Sequence[date], series: dict[str, list[int]], label: str) -> SafeString:
    """One bar per day, stacked by series (run statuses)."""
    totals = [sum(values[i] for values in series.values()) for i in range(len(days))]
    top = _nice_max(max(totals, default=0))
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    slot = (WIDTH - PAD_LEFT - PAD_RIGHT) / max(len(days), 1)
    bars = []
    for i, day in enumerate(days):
        base = 0.0
        x = PAD_LEFT + slot * i + slot * 0.15
        for name, values in series.items():
            value = values[i]
            if not value:
                continue
            height = plot_h * value / top
            y = PAD_TOP + plot_h - base - height
            bars.append(
                format_html(
                    '<rect class="bar" x="{}" y="{}" width="{}" height="{}" fill="{}">'
                    "<title>{}: {} {}</title></rect>",
                    f"{x:.1f}",
                    f"{y:.1f}",
                    f"{slot * 0.7:.1f}",
                    f"{height:.1f}",
                    STATUS_COLOURS.get(name, "#667085"),
                    day.isoformat(),
                    value,
                    name,
                )
            )
            base += height
    return _frame(top, label, days, bars)


def bars(days: Sequence[date], values: Sequence[float], label: str, unit: str) -> SafeString:
    top = _nice_max(max(values, default=0))
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    slot = (WIDTH - PAD_LEFT - PAD_RIGHT) / max(len(days), 1)
    inner = []
    for i, (day, value) in enumerate(zip(days, values, strict=True)):
        if not value:
            continue
        height = plot_h * value / top
        inner.append(
            format_html(
                '<rect class="bar bar-single" x="{}" y="{}" width="{}" height="{}">'
                "<title>{}: {} {}</title></rect>",
                f"{PAD_LEFT + slot * i + slot * 0.15:.1f}",
                f"{PAD_TOP + plot_h - height:.1f}",
                f"{slot * 0.7:.1f}",
                f"{height:.1f}",
                day.isoformat(),
                _number(value),
                unit,
            )
        )
    return _frame(top, label, days, inner)


def lines(
    days: Sequence[date], series: dict[str, Sequence[float | None]], label: str, unit: str
) -> SafeString:
    """One polyline per series (p50, p95); days without data leave a gap."""
    values = [v for values in series.values() for v in values if v is not None]
    top = _nice_max(max(values, default=0))
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    slot = (WIDTH - PAD_LEFT - PAD_RIGHT) / max(len(days), 1)
    inner = []
    for index, (name, points) in enumerate(series.items()):
        css = f"line line-{index}"
        coordinates = []
        for i, (day, value) in enumerate(zip(days, points, strict=True)):
            if value is None:
                continue
            x = PAD_LEFT + slot * (i + 0.5)
            y = PAD_TOP + plot_h * (1 - value / top)
            coordinates.append(f"{x:.1f},{y:.1f}")
            # A zero-length round-capped segment with a non-scaling stroke: a dot that stays
            # round however the plot stretches (a circle would turn into an ellipse).
            inner.append(
                format_html(
                    '<line class="{} dot" x1="{}" x2="{}" y1="{}" y2="{}"><title>{}: {} {} {}'
                    "</title></line>",
                    css,
                    f"{x:.1f}",
                    f"{x:.1f}",
                    f"{y:.1f}",
                    f"{y:.1f}",
                    day.isoformat(),
                    name,
                    _number(round(value)),
                    unit,
                )
            )
        if coordinates:
            inner.insert(
                0,
                format_html(
                    '<polyline class="{}" fill="none" points="{}"></polyline>',
                    css,
                    " ".join(coordinates),
                ),
            )
    return _frame(top, label, days, inner)


def legend(names: Sequence[str]) -> SafeString:
    items = "".join(
        format_html(
            # An SVG fill, not an inline style: the Content-Security-Policy allows no style="".
            '<span class="legend-item"><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">'
            '<rect width="10" height="10" rx="2" fill="{}"/></svg>{}</span>',
            STATUS_COLOURS.get(name, "#667085"),
            name,
        )
        for name in names
    )
    return mark_safe(f'<div class="legend">{items}</div>')  # noqa: S308 - escaped above
