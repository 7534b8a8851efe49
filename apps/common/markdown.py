"""Rendering untrusted markdown (message text, extracted documents) to safe HTML.

markdown-it-py's `js-default` preset refuses raw HTML and unsafe link schemes; nh3 then keeps
only an allow-list of tags and attributes, so nothing an end user or a web page wrote can run
in an owner's browser. Images are links unless the viewer asks for them: an image would make
the owner's browser fetch a URL an end user chose (a tracking pixel, an address leak).
"""

from functools import cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

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
    "a": {"href", "title", "class"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "code": {"class"},
}


def _image_as_link(renderer, tokens, idx, options, env) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env) or src
    return f'<a class="remote-image" href="{escapeHtml(src)}">Image: {escapeHtml(alt)}</a>'


@cache
def _parser(*, images: bool) -> MarkdownIt:
    parser = MarkdownIt("js-default").enable("table").enable("strikethrough")
    if not images:
        parser.add_render_rule("image", _image_as_link)
    return parser


def render_markdown(text: str, *, remote_images: bool = False) -> SafeString:
    html = _parser(images=remote_images).render(text or "")
    cleaned = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(cleaned)  # noqa: S308 - sanitized by nh3 just above
