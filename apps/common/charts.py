"""The console's server-rendered SVG charts (apps.activity's Overview, apps.usage's Usage page):
no JavaScript library, no CDN. Every label goes through `format_html`/`escape`.

A chart is a plot that stretches to its box, HTML axis labels beside and under it (text never
stretches), and one *mark* per day: a link (the runs of that day, or wherever the page says)
holding that day's shapes and a full-height hit area, named by an `aria-label` and an SVG
`<title>` that say the day's values. The marks are one stop in the Tab order (a roving
tabindex: the arrow keys, Home and End move between days, Enter follows the link) and
static/js/console.js shows the same words in a visible tooltip on hover and focus. Under the
plot a "Show data" table holds every number of the chart, with the same links.

The per-day pieces (a year is 366 marks and table rows per chart, six charts a page) are built
with f-strings around `_esc` rather than `format_html`, which cost ~0.5 s a year's Overview.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from html import escape as _html_escape

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeData, SafeString, mark_safe

# The plot's own coordinates; the SVG stretches to its box (CSS), so everything drawn in it is a
# shape that may stretch. Axis labels are HTML beside and under it: text never stretches.
WIDTH, HEIGHT = 640, 176
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 0, 0, 1, 0
X_LABELS = 6
PLOT_H = HEIGHT - PAD_TOP - PAD_BOTTOM


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


def number(value: float | None, decimals: int = 0) -> str:
    """A value as the tooltips and data tables write it: every digit, thousands separated."""
    if value is None:
        return "—"
    return f"{value:,.{decimals}f}"


@dataclass(frozen=True)
class Link:
    """A data-table cell that links somewhere (the runs a number counts)."""

    text: str
    href: str


@dataclass(frozen=True)
class ChartData:
    """The numbers behind a chart: a header and one row per day (cells are text or Links)."""

    columns: Sequence[str]
    rows: Sequence[Sequence[str | Link]]


def _x_label_positions(count: int) -> list[int]:
    """At most X_LABELS day indexes, evenly spread from the first day to the last, so the
    labels sit at the ends and evenly between them (the axis row spaces them the same way)."""
    if count <= X_LABELS:
        return list(range(count))
    return [round(j * (count - 1) / (X_LABELS - 1)) for j in range(X_LABELS)]


def slot_width(count: int) -> float:
    return (WIDTH - PAD_LEFT - PAD_RIGHT) / max(count, 1)


def y_of(value: float, top: float) -> float:
    return PAD_TOP + PLOT_H * (1 - value / top)


def _esc(value: object) -> str:
    """`conditional_escape` without its per-call overhead: safe strings as they are."""
    return value if isinstance(value, SafeData) else _html_escape(str(value))  # type: ignore[return-value]


def bar_shape(index: int, count: int, low: float, high: float, top: float, **attrs: str) -> str:
    """A bar of day `index` from `low` to `high` (in values), with its class and fill."""
    slot = slot_width(count)
    extra = "".join(f' {_esc(name)}="{_esc(value)}"' for name, value in attrs.items())
    return mark_safe(  # noqa: S308 - every value escaped
        f'<rect x="{PAD_LEFT + slot * index + slot * 0.15:.1f}" y="{y_of(high, top):.1f}" '
        f'width="{slot * 0.7:.1f}" height="{PLOT_H * (high - low) / top:.1f}"{extra}></rect>'
    )


def day_mark(index: int, count: int, *, tip: str, href: str, shapes: Sequence[str]) -> str:
    """Day `index`'s link: its shapes over a full-height hit area, named by `tip`. The first
    day is the chart's stop in the Tab order; the script moves it with the arrow keys."""
    slot = slot_width(count)
    tip = _esc(tip)
    return mark_safe(  # noqa: S308 - every value escaped, shapes built escaped above
        f'<a class="mark" href="{_esc(href)}" tabindex="{0 if index == 0 else -1}" '
        f'aria-label="{tip}" data-tip="{tip}"><title>{tip}</title>'
        f'<rect class="hit" x="{PAD_LEFT + slot * index:.1f}" y="0" width="{slot:.1f}" '
        f'height="{HEIGHT}"></rect>{"".join(shapes)}</a>'
    )


def _cell(value: str | Link) -> str:
    if isinstance(value, Link):
        return f'<a href="{_esc(value.href)}">{_esc(value.text)}</a>'
    return _esc(value)


def data_table(label: str, data: ChartData) -> SafeString:
    """The chart's numbers as a table, folded under "Show data"."""
    head = format_html_join("", '<th scope="col">{}</th>', ((name,) for name in data.columns))
    body = mark_safe(  # noqa: S308 - every cell escaped by _cell
        "".join(
            f'<tr><th scope="row">{_cell(row[0])}</th>'
            + "".join(f'<td class="num">{_cell(value)}</td>' for value in row[1:])
            + "</tr>"
            for row in data.rows
        )
    )
    return format_html(
        '<details class="chart-data"><summary>Show data</summary><div class="chart-data-scroll">'
        '<table class="table small hbars chart-table"><caption class="visually-hidden">{}</caption>'
        "<thead><tr>{}</tr></thead><tbody>{}</tbody></table></div></details>",
        label,
        head,
        body,
    )


def chart_frame(
    top: float,
    label: str,
    days: Sequence[date],
    marks: Sequence[str],
    *,
    data: ChartData,
    decorations: Sequence[str] = (),
) -> SafeString:
    """The chart: y labels, the plot (grid, `decorations` such as lines, then the day marks),
    x labels, a tooltip box for the script, and the data table."""
    parts: list[str] = [
        format_html(
            '<figure class="chart-box" data-chart><figcaption class="visually-hidden">'
            "{} (a table of the values follows)</figcaption>",
            label,
        ),
        format_html(
            '<div class="chart-y" aria-hidden="true"><span>{}</span><span>{}</span>'
            "<span>0</span></div>",
            short_number(top),
            short_number(top / 2),
        ),
        format_html(
            '<svg class="chart" viewBox="0 0 {} {}" preserveAspectRatio="none" role="group" '
            'aria-label="{}: one link per day; arrow keys move between days">',
            WIDTH,
            HEIGHT,
            label,
        ),
    ]
    for fraction in (0, 0.5, 1):
        y = PAD_TOP + PLOT_H * (1 - fraction)
        parts.append(
            format_html(
                '<line class="grid-line" x1="0" x2="{}" y1="{}" y2="{}"></line>',
                WIDTH,
                f"{y:.1f}",
                f"{y:.1f}",
            )
        )
    parts.extend(decorations)
    parts.extend(marks)
    parts.append(mark_safe('</svg><div class="chart-tip" aria-hidden="true" hidden></div>'))
    parts.append(mark_safe('<div class="chart-x" aria-hidden="true">'))
    # A range over a year shows the year too, so two Januaries are not confused.
    pattern = "%b %d" if not days or (days[-1] - days[0]).days < 180 else "%b %d, %Y"
    for i in _x_label_positions(len(days)):
        parts.append(format_html("<span>{}</span>", days[i].strftime(pattern)))
    parts.append(mark_safe("</div>"))
    parts.append(data_table(label, data))
    parts.append(mark_safe("</figure>"))
    return mark_safe("".join(parts))  # noqa: S308 - every piece above is escaped


# --- the three kinds of chart the pages draw ---------------------------------------------------


def bars(
    days: Sequence[date],
    values: Sequence[float],
    label: str,
    *,
    unit: str,
    links: Sequence[str],
    decimals: int = 0,
    names: Sequence[str] | None = None,
    heading: str = "Day",
) -> SafeString:
    """One bar per day (or per bucket of days: `names` say them, `heading` their column)."""
    top = nice_max(max(values, default=0))
    count = len(days)
    names = names or [day.isoformat() for day in days]
    marks = []
    rows: list[list[str | Link]] = []
    for i, value in enumerate(values):
        text = number(value, decimals)
        shapes = (
            [bar_shape(i, count, 0, value, top, **{"class": "bar bar-single"})] if value else []
        )
        marks.append(
            day_mark(i, count, tip=f"{names[i]}: {text} {unit}", href=links[i], shapes=shapes)
        )
        rows.append([Link(names[i], links[i]), text])
    data = ChartData((heading, unit.capitalize()), rows)
    return chart_frame(top, label, days, marks, data=data)


def stacked_bars(
    days: Sequence[date],
    series: dict[str, list[int]],
    label: str,
    *,
    colours: dict[str, str],
    links: Sequence[str],
    unit: str = "runs",
    names: Sequence[str] | None = None,
    heading: str = "Day",
) -> SafeString:
    """One bar per day (or bucket, as `bars`), stacked by series (run statuses)."""
    count = len(days)
    names = names or [day.isoformat() for day in days]
    totals = [sum(values[i] for values in series.values()) for i in range(count)]
    top = nice_max(max(totals, default=0))
    marks = []
    rows: list[list[str | Link]] = []
    for i in range(count):
        base = 0
        shapes = []
        for name, values in series.items():
            if values[i]:
                shapes.append(
                    bar_shape(
                        i,
                        count,
                        base,
                        base + values[i],
                        top,
                        **{"class": "bar", "fill": colours.get(name, "#667085")},
                    )  # fmt: skip
                )
                base += values[i]
        parts = ", ".join(
            f"{number(values[i])} {name}" for name, values in series.items() if values[i]
        )
        tip = f"{names[i]}: {number(totals[i])} {unit}" + (f" ({parts})" if parts else "")
        marks.append(day_mark(i, count, tip=tip, href=links[i], shapes=shapes))
        rows.append([Link(names[i], links[i]),
                     *(number(values[i]) for values in series.values()), number(totals[i])])  # fmt: skip
    data = ChartData((heading, *(name.capitalize() for name in series), "Total"), rows)
    return chart_frame(top, label, days, marks, data=data)


@dataclass(frozen=True)
class Reference:
    """A horizontal line across the plot (a limit), named in its own `<title>`."""

    value: float
    css: str
    name: str


def lines(
    days: Sequence[date],
    series: dict[str, Sequence[float | None]],
    label: str,
    *,
    unit: str,
    links: Sequence[str],
    decimals: int = 0,
    references: Sequence[Reference] = (),
    names: Sequence[str] | None = None,
    heading: str = "Day",
) -> SafeString:
    """One polyline per series (p50, p95); days (buckets, as `bars`) without a value leave a
    gap."""
    names = names or [day.isoformat() for day in days]
    values = [v for points in series.values() for v in points if v is not None]
    top = nice_max(max([*values, *(ref.value for ref in references)], default=0))
    count = len(days)
    slot = slot_width(count)
    decorations = []
    for index, points in enumerate(series.values()):
        coordinates = " ".join(
            f"{PAD_LEFT + slot * (i + 0.5):.1f},{y_of(value, top):.1f}"
            for i, value in enumerate(points)
            if value is not None
        )
        if coordinates:
            decorations.append(
                format_html(
                    '<polyline class="line line-{}" fill="none" points="{}"></polyline>',
                    index,
                    coordinates,
                )
            )
    for ref in references:
        y = f"{y_of(ref.value, top):.1f}"
        decorations.append(
            format_html(
                '<line class="{}" x1="{}" x2="{}" y1="{}" y2="{}"><title>{}: {} {}</title></line>',
                ref.css,
                PAD_LEFT,
                WIDTH - PAD_RIGHT,
                y,
                y,
                ref.name,
                number(ref.value, decimals),
                unit,
            )  # fmt: skip
        )
    marks = []
    rows: list[list[str | Link]] = []
    for i in range(count):
        x = f"{PAD_LEFT + slot * (i + 0.5):.1f}"
        shapes = []
        said = []
        for index, (name, points) in enumerate(series.items()):
            value = points[i]
            said.append(f"{name} {number(value, decimals)}" + ("" if value is None else f" {unit}"))
            if value is not None:
                # A zero-length round-capped segment with a non-scaling stroke: a dot that
                # stays round however the plot stretches (a circle would turn into an ellipse).
                y = f"{y_of(value, top):.1f}"
                shapes.append(
                    f'<line class="line line-{index} dot" x1="{x}" x2="{x}" y1="{y}" y2="{y}">'
                    "</line>"
                )
        tip = f"{names[i]}: " + ", ".join(said)
        marks.append(day_mark(i, count, tip=tip, href=links[i], shapes=shapes))
        rows.append([Link(names[i], links[i]),
                     *(number(points[i], decimals) for points in series.values())])  # fmt: skip
    data = ChartData((heading, *(f"{name} ({unit})" for name in series)), rows)
    return chart_frame(top, label, days, marks, data=data, decorations=decorations)
