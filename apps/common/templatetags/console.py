"""Template helpers shared by every console page: `{% load console %}`."""

from datetime import datetime

from django import template
from django.utils.timesince import timesince

from apps.common.durations import duration_text
from apps.common.markdown import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str, remote_images: bool = False):
    """Untrusted markdown to sanitized HTML; images stay links unless `remote_images`."""
    return render_markdown(text, remote_images=bool(remote_images))


@register.simple_tag(takes_context=True)
def query_with(context, **changes) -> str:
    """The current query string with some parameters changed (None or "" removes one)."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = value
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter(name="ms_after")
def ms_after(later, earlier) -> str:
    """`+1.7 s` from `earlier` to `later`, for timelines; empty when either is missing."""
    if later is None or earlier is None:
        return ""
    return f"+{duration_text((later - earlier).total_seconds() * 1000)}"


@register.filter(name="duration")
def duration_filter(milliseconds) -> str:
    """Milliseconds as people read them: `412 ms`, `3.0 s`, `16 min 50 s`; "—" when unknown."""
    if milliseconds is None or milliseconds == "":
        return "—"
    return duration_text(float(milliseconds))


@register.filter(name="credits")
def credits_filter(value) -> str:
    """Credits with at most four decimals and no trailing zeros (0.75, 2, 0.0001)."""
    if value is None:
        return ""
    return f"{float(value):.4f}".rstrip("0").rstrip(".")


@register.filter(name="ago")
def ago(value: datetime | None) -> str:
    """`21 minutes ago`, `3 hours ago`, `just now`: one unit, so a table's time column stays
    narrow (Django's `timesince` gives two: `3 hours, 24 minutes`)."""
    if value is None:
        return ""
    since = timesince(value, depth=1)
    return "just now" if since.startswith("0\xa0") else f"{since} ago"


@register.filter(name="credits_fixed")
def credits_fixed(value) -> str:
    """Credits with two decimals and thousands separators (`1,234.50`), for a column or card
    whose figures line up; a tiny non-zero amount reads `< 0.01`, not `0.00`."""
    if value is None or value == "":
        return "0.00"
    amount = float(value)
    if 0 < abs(amount) < 0.005:
        return "< 0.01" if amount > 0 else "> -0.01"
    return f"{amount:,.2f}"
