"""The frame of the console's server-rendered SVG charts (apps.activity's Overview, apps.usage's
Usage page): the plot's coordinates, a rounded top for the y axis, short numbers, the grid and
the day labels. Every label goes through `format_html`/`escape`."""

from collections.abc import Sequence
from datetime import date

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

# The plot's own coordinates; the SVG stretches to its box (CSS), so everything drawn in it is a
# shape that may stretch. Axis labels are HTML beside and under it: text never stretches.
WIDTH, HEIGHT = 640, 176
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 0, 0, 1, 0
X_LABELS = 6


def nice_max(value: float) -> float:
    if value <= 0:
        return 1
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10 * magnitude


def short_number(value: float) -> str:
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


def chart_frame(top: float, label: str, days: Sequence[date], inner: Sequence[str]) -> SafeString:
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    parts: list[str] = [
        format_html('<figure class="chart-box" role="img" aria-label="{}">', label),
        format_html(
            '<div class="chart-y" aria-hidden="true"><span>{}</span><span>{}</span>'
            "<span>0</span></div>",
            short_number(top),
            short_number(top / 2),
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
