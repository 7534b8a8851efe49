"""HTML: the main content found by trafilatura, written as markdown by our own renderer.

trafilatura (``output_format="html"``, tables, links and metadata on) removes navigation, ads
and other chrome, and gives back clean HTML with the title in a ``<meta>``. Our renderer turns
that into markdown, so tables go through ``markdown_table`` like every other format:

* ``h1``-``h6`` are headings, ``ul``/``ol`` nested lists, ``pre`` fenced code, ``blockquote``
  quotes, ``a`` links (http, https and mailto only; relative links resolved against
  ``source_url``), images and forms are dropped;
* a data table becomes a markdown table; a layout table (tables inside it, or a single
  column) is read as blocks, cell by cell.

A short page (under ``SHORT_PAGE_CHARS`` of visible text: datasheets laid out with tables,
pages of a few lines) has little chrome to remove and is where trafilatura's heuristics are
weakest (it may drop the page's one table, or flatten it to lines), so it is rendered whole; so
is a page where trafilatura finds nothing. "Whole" means the ``<body>`` with scripts, styles,
templates, forms' controls and other non-text elements removed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import quote, urljoin

import lxml.html
import trafilatura
from lxml import etree

from .markdown import (
    clean_text,
    escape_block_starts,
    escape_inline,
    join_blocks,
    markdown_list,
    markdown_table,
)
from .result import Extraction
from .text import decode_or_fail

_DROPPED = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "embed"}
_DROPPED |= {"img", "picture", "video", "audio", "canvas", "map", "input", "select", "button"}
_DROPPED |= {"textarea", "option"}
_BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "form"}
_BLOCKS |= {"fieldset", "address", "figure", "figcaption", "details", "summary", "center", "dl"}
_BLOCKS |= {"dt", "dd", "body", "html", "hgroup", "caption", "legend", "tbody", "thead", "tfoot"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_SAFE_LINK = re.compile(r"^(https?|mailto):", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
SHORT_PAGE_CHARS = 5_000


def extract_html(data: bytes, *, source_url: str | None = None) -> Extraction:
    text = _XML_DECLARATION.sub("", decode_or_fail(data))
    page = _parse(text)
    full_text = _visible_text(page)

    main_html = trafilatura.extract(
        text,
        url=source_url,
        output_format="html",
        include_tables=True,
        include_links=True,
        include_images=False,
        include_comments=False,
        with_metadata=True,
    )
    main = _parse(main_html) if main_html else None
    title = _meta_title(main) or _page_title(page)
    main_text = _visible_text(main) if main is not None else ""

    if _use_main_content(main_text, full_text):
        markdown = _Renderer(base_url=source_url).render(_body(main))
    else:
        markdown = _Renderer(base_url=source_url).render(_body(page))
    return Extraction(markdown=markdown + "\n" if markdown else "", page_count=None, title=title)


def _use_main_content(main_text: str, full_text: str) -> bool:
    return bool(main_text) and len(full_text) >= SHORT_PAGE_CHARS


def _parse(text: str) -> etree._Element | None:
    if not text.strip():
        return None
    try:
        root = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return None
    # Comments and processing instructions have no text; dropping keeps their tails. The
    # <head> stays for its title (only the <body> is rendered).
    for element in list(root.iter()):
        is_text = isinstance(element.tag, str) and element.tag.lower() not in _DROPPED
        if not is_text and element.getparent() is not None:
            element.drop_tree()
    return root


def _body(root: etree._Element | None) -> etree._Element | None:
    if root is None:
        return None
    body = root.find("body")
    return body if body is not None else root


def _visible_text(root: etree._Element | None) -> str:
    body = _body(root)
    if body is None:
        return ""
    return " ".join(" ".join(body.itertext()).split())


def _meta_title(root: etree._Element | None) -> str | None:
    if root is None:
        return None
    for meta in root.iter("meta"):
        if meta.get("name") == "title" and (meta.get("content") or "").strip():
            return " ".join(meta.get("content", "").split())
    return None


def _page_title(root: etree._Element | None) -> str | None:
    if root is None:
        return None
    for tag in ("title", "h1"):
        element = root.find(f".//{tag}")
        if element is not None:
            title = " ".join(element.text_content().split())
            if title:
                return title[:300]
    return None


_BLOCK_TAGS = _BLOCKS | set(_HEADINGS) | {"ul", "ol", "table", "pre", "blockquote", "hr", "li"}
_BLOCK_TAGS |= {"tr", "td", "th"}


class _Renderer:
    """HTML element tree -> markdown blocks.

    Text nodes are escaped where they are read (``escape=True``), except in table cells,
    which ``markdown_table`` escapes itself.
    """

    def __init__(self, *, base_url: str | None) -> None:
        self.base_url = base_url

    def render(self, root: etree._Element | None) -> str:
        if root is None:
            return ""
        return join_blocks(self._blocks(root))

    # Blocks ------------------------------------------------------------------------------

    def _blocks(self, element: etree._Element) -> list[str]:
        """Markdown blocks for an element's content: inline runs become paragraphs."""
        blocks: list[str] = []
        inline: list[str] = [self._text(element.text, escape=True)]
        for child in element:
            tag = _tag(child)
            if tag in _BLOCK_TAGS:
                blocks.extend(self._paragraph(inline))
                inline = []
                blocks.extend(self._block(child, tag))
            elif tag is not None:
                inline.append(self._inline(child, escape=True))
            inline.append(self._text(child.tail, escape=True))
        blocks.extend(self._paragraph(inline))
        return blocks

    def _block(self, element: etree._Element, tag: str) -> list[str]:
        if tag in _HEADINGS:
            text = " ".join(self._inline_content(element, escape=True).split())
            return [f"{'#' * _HEADINGS[tag]} {text}"] if text else []
        if tag in ("ul", "ol"):
            items = list(self._list_items(element, level=0))
            return [markdown_list(items)] if items else []
        if tag == "table":
            return self._table(element)
        if tag == "pre":
            return [_code_block(clean_text(element.text_content()))]
        if tag == "blockquote":
            inner = join_blocks(self._blocks(element))
            quoted = "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))
            return [quoted] if inner else []
        if tag == "hr":
            return []
        return self._blocks(element)

    def _paragraph(self, inline: list[str]) -> list[str]:
        lines = [" ".join(line.split()) for line in "".join(inline).split("\n")]
        paragraph = "\n".join(line for line in lines if line)
        return [escape_block_starts(paragraph)] if paragraph else []

    def _list_items(self, element: etree._Element, *, level: int) -> Iterator[tuple[int, str, str]]:
        # markdown_list escapes item text, so items are read unescaped.
        number = 0
        ordered = _tag(element) == "ol"
        for child in element:
            if _tag(child) != "li":
                continue
            number += 1
            nested = [c for c in child if _tag(c) in ("ul", "ol")]
            text = self._inline_content(child, escape=False, skip=nested)
            if text.strip():
                yield level, f"{number}." if ordered else "-", text
            for sub in nested:
                yield from self._list_items(sub, level=level + 1)

    def _table(self, table: etree._Element) -> list[str]:
        rows = [r for r in table.iter("tr") if _owning_table(r) is table]
        cells_per_row = [[c for c in row if _tag(c) in ("td", "th")] for row in rows]
        width = max((len(cells) for cells in cells_per_row), default=0)
        inner_tables = [t for t in table.iter("table") if t is not table]
        if width <= 1 or inner_tables:
            # A layout table: its cells are page regions, not data.
            blocks: list[str] = []
            for cells in cells_per_row:
                for cell in cells:
                    blocks.extend(self._blocks(cell))
            return blocks
        grid = []
        for cells in cells_per_row:
            row: list[str] = []
            for cell in cells:
                row.append(" ".join(self._inline_content(cell, escape=False).split()))
                row.extend([""] * (min(_int(cell.get("colspan")), 64) - 1))
            grid.append(row)
        blocks = []
        caption = table.find("caption")
        if caption is not None:
            blocks.extend(self._paragraph([self._inline_content(caption, escape=True)]))
        blocks.append(markdown_table(grid))
        return blocks

    # Inline ------------------------------------------------------------------------------

    def _text(self, text: str | None, *, escape: bool) -> str:
        text = clean_text(text or "")
        return escape_inline(text) if escape else text

    def _inline_content(
        self,
        element: etree._Element,
        *,
        escape: bool,
        skip: list[etree._Element] | None = None,
    ) -> str:
        pieces = [self._text(element.text, escape=escape)]
        for child in element:
            if _tag(child) is not None and not (skip and child in skip):
                pieces.append(self._inline(child, escape=escape))
            pieces.append(self._text(child.tail, escape=escape))
        return "".join(pieces)

    def _inline(self, element: etree._Element, *, escape: bool) -> str:
        tag = _tag(element)
        if tag == "br":
            return "\n"
        text = self._inline_content(element, escape=escape)
        if tag == "a":
            return self._link(text, element.get("href"))
        # Block elements met inside inline content (a <p> in a cell) still separate words.
        return f" {text} " if tag in _BLOCK_TAGS else text

    def _link(self, label: str, href: str | None) -> str:
        label = " ".join(label.split())
        if not label or not href:
            return label
        url = urljoin(self.base_url, href.strip()) if self.base_url else href.strip()
        if not _SAFE_LINK.match(url):
            return label
        label = label.replace("[", "(").replace("]", ")")
        return f"[{label}]({quote(url, safe=':/?#@!$&*+,;=%~.-_')})"


def _tag(element: etree._Element) -> str | None:
    return element.tag.lower() if isinstance(element.tag, str) else None


def _owning_table(element: etree._Element) -> etree._Element | None:
    parent = element.getparent()
    while parent is not None and _tag(parent) != "table":
        parent = parent.getparent()
    return parent


def _int(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


def _code_block(code: str) -> str:
    code = code.strip("\n")
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"
