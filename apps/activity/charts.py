"""Server-rendered SVG charts for the Overview: no JavaScript library, no CDN.

Each function returns escaped, self-contained `<svg>` markup with a `<title>` on every bar or
point, which browsers show as a tooltip. Values come from our own aggregates, but every label
still goes through `format_html`/`escape`.
"""

from collections.abc import Sequence
from datetime import date

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 640, 200
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 48, 8, 10, 24
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


def _frame(top: float, label: str, days: Sequence[date], inner: Sequence[str]) -> SafeString:
    plot_w = WIDTH - PAD_LEFT - PAD_RIGHT
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    parts: list[str] = [
        format_html(
            '<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}" '
            'preserveAspectRatio="none">',
            WIDTH,
            HEIGHT,
            label,
        )
    ]
    for fraction in (0, 0.5, 1):
        y = PAD_TOP + plot_h * (1 - fraction)
        parts.append(
            format_html(
                '<line class="grid-line" x1="{}" x2="{}" y1="{}" y2="{}"></line>'
                '<text class="axis" x="{}" y="{}" text-anchor="end">{}</text>',
                PAD_LEFT,
                WIDTH - PAD_RIGHT,
                f"{y:.1f}",
                f"{y:.1f}",
                PAD_LEFT - 6,
                f"{y + 4:.1f}",
                _number(top * fraction),
            )
        )
    step = max(1, len(days) // 6)
    slot = plot_w / max(len(days), 1)
    for i, day in enumerate(days):
        if i % step == 0:
            parts.append(
                format_html(
                    '<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>',
                    f"{PAD_LEFT + slot * (i + 0.5):.1f}",
                    HEIGHT - 6,
                    day.strftime("%b %d"),
                )
            )
    parts.extend(inner)
    parts.append(mark_safe("</svg>"))
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
            inner.append(
                format_html(
                    '<circle class="{}" cx="{}" cy="{}" r="3"><title>{}: {} {} {}</title></circle>',
                    css,
                    f"{x:.1f}",
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
