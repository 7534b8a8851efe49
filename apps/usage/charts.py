"""The Usage page's chart: credits per day against the monthly limit, as inline SVG.

Built on the chart frame the Overview draws in too (apps.common.charts: axes, grid, day
labels, escaping), so both pages look alike. Bars are each day's credits; the line is the
running total of the day's month (it restarts on the 1st), which is what the limit applies to;
a solid line marks the limit and a dashed one its 80 %.
"""

from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from django.utils.html import format_html
from django.utils.safestring import SafeString

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


def credits_against_limit(
    days: Sequence[date], credits: Sequence[float], limit: Decimal | None
) -> SafeString:
    month_to_date = []
    running = 0.0
    for i, day in enumerate(days):
        if i == 0 or day.day == 1:
            running = 0.0
        running += credits[i]
        month_to_date.append(running)
    top = nice_max(max([*month_to_date, float(limit or 0)], default=0))
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    slot = (WIDTH - PAD_LEFT - PAD_RIGHT) / max(len(days), 1)
    inner: list[str] = []
    for i, (day, value) in enumerate(zip(days, credits, strict=True)):
        if value:
            height = plot_h * value / top
            inner.append(
                format_html(
                    '<rect class="bar bar-single" x="{}" y="{}" width="{}" height="{}">'
                    "<title>{}: {} credits</title></rect>",
                    f"{PAD_LEFT + slot * i + slot * 0.15:.1f}",
                    f"{PAD_TOP + plot_h - height:.1f}",
                    f"{slot * 0.7:.1f}",
                    f"{height:.1f}",
                    day.isoformat(),
                    short_number(round(value, 2)),
                )
            )
    points = " ".join(
        f"{PAD_LEFT + slot * (i + 0.5):.1f},{PAD_TOP + plot_h * (1 - value / top):.1f}"
        for i, value in enumerate(month_to_date)
    )
    if points:
        inner.append(
            format_html(
                '<polyline class="line line-0 month-to-date" fill="none" points="{}">'
                "<title>Credits this month so far</title></polyline>",
                points,
            )
        )
    if limit is not None:
        for fraction, css, name in ((1, "limit-line", "Limit"), (0.8, "limit-line-80", "80 %")):
            y = PAD_TOP + plot_h * (1 - float(limit) * fraction / top)
            inner.append(
                format_html(
                    '<line class="{}" x1="{}" x2="{}" y1="{}" y2="{}"><title>{}: {} credits'
                    "</title></line>",
                    css,
                    PAD_LEFT,
                    WIDTH - PAD_RIGHT,
                    f"{y:.1f}",
                    f"{y:.1f}",
                    name,
                    short_number(round(float(limit) * fraction, 2)),
                )
            )
    return chart_frame(top, "Credits per day against the monthly limit", days, inner)
