"""The console's template filters: times in tables read in one short unit."""

from datetime import timedelta

from django.template import Context, Template
from django.utils import timezone


def _render(source: str, **context) -> str:
    return Template("{% load console %}" + source).render(Context(context))


def test_ago_is_one_unit_and_just_now_under_a_minute() -> None:
    now = timezone.now()
    assert _render("{{ t|ago }}", t=now - timedelta(seconds=20)) == "just now"
    assert _render("{{ t|ago }}", t=now - timedelta(minutes=21, seconds=5)) == "21\xa0minutes ago"
    assert _render("{{ t|ago }}", t=now - timedelta(hours=3, minutes=24)) == "3\xa0hours ago"
    assert _render("{{ t|ago }}", t=now - timedelta(days=40)) == "1\xa0month ago"
    assert _render("{{ t|ago }}", t=None) == ""
