"""Server-rendered SVG charts for the Overview: no JavaScript library, no CDN. They are drawn in
the frame of apps.common.charts, which the Usage page shares.

Each function returns escaped, self-contained `<svg>` markup with a `<title>` on every bar or
point, which browsers show as a tooltip. Values come from our own aggregates, but every label
still goes through `format_html`/`escape`.
"""

from collections.abc import Sequence
from datetime import date

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from apps.common.charts import (
    HEIGHT,
    PAD_BOTTOM,
    PAD_LEFT,
    PAD_RIGHT,
    PAD_TOP,
    WIDTH,
    chart_frame,
    nice_max,
    short_number,
)

STATUS_COLOURS = {
    "completed": "#12b76a",
    "failed": "#f04438",
    "aborted": "#f79009",
    "streaming": "#2e90fa",
}


def stacked_bars(days: Sequence[date], series: dict[str, list[int]], label: str) -> SafeString:
    """One bar per day, stacked by series (run statuses)."""
    totals = [sum(values[i] for values in series.values()) for i in range(len(days))]
    top = nice_max(max(totals, default=0))
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
    return chart_frame(top, label, days, bars)


def bars(days: Sequence[date], values: Sequence[float], label: str, unit: str) -> SafeString:
    top = nice_max(max(values, default=0))
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
                short_number(value),
                unit,
            )
        )
    return chart_frame(top, label, days, inner)


def lines(
    days: Sequence[date], series: dict[str, Sequence[float | None]], label: str, unit: str
) -> SafeString:
    """One polyline per series (p50, p95); days without data leave a gap."""
    values = [v for values in series.values() for v in values if v is not None]
    top = nice_max(max(values, default=0))
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
                    short_number(round(value)),
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
    return chart_frame(top, label, days, inner)


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
