"""Rendering untrusted markdown (message text, extracted documents) to safe HTML.

markdown-it-py's `js-default` preset refuses raw HTML and unsafe link schemes; nh3 then keeps
only an allow-list of tags and attributes, so nothing an end user or a web page wrote can run
in an owner's browser.
"""

from functools import cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_ALLOWED_TAGS = {
    "a",
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "img",
}
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "th": {"style"},
    "td": {"style"},
    "ol": {"start"},
    "code": {"class"},
}


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("js-default").enable("table").enable("strikethrough")


def render_markdown(text: str) -> SafeString:
    html = _parser().render(text or "")
    cleaned = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
    return mark_safe(cleaned)  # noqa: S308 - sanitized by nh3 just above
