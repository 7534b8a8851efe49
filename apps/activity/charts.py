"""The Overview's charts, drawn by apps.common.charts (which the Usage page shares): the run
statuses' colours and their legend. Every day of a chart links to the Runs list of that day."""

from collections.abc import Sequence

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from apps.common.charts import bars, lines, stacked_bars

STATUS_COLOURS = {
    "completed": "#12b76a",
    "failed": "#f04438",
    "aborted": "#f79009",
    "streaming": "#2e90fa",
}

__all__ = ["STATUS_COLOURS", "bars", "legend", "lines", "runs_by_status"]


def runs_by_status(days, series: dict[str, list[int]], label: str, *, links, **named) -> SafeString:
    """Runs stacked by status; `named` as apps.common.charts.stacked_bars takes them."""
    return stacked_bars(days, series, label, colours=STATUS_COLOURS, links=links, **named)


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
