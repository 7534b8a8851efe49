"""A hit's snippet: the passage's words without markdown syntax, HTML-escaped, the matched
words in <mark> tags; for a passage holding a table, the row that matched under its header."""

from __future__ import annotations

import html
import re

# Markers around highlighted words inside the database's snippet; control characters, so they
# cannot be confused with the text, which is HTML-escaped before they become <mark> tags.
_START, _STOP = "\x02", "\x03"
_CONTROL_MARKERS = re.compile("[\x02\x03]")
# Markdown syntax a snippet shows as text: what the chunk's markdown means is read, not its
# markup. Links keep their text, table rows their cells ("Card · 3-5 days"), headings,
# emphasis and code spans their words.
_MARKDOWN_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*\)")
_TABLE_RULE = re.compile(r"\|?(?:\s*:?-{3,}:?\s*\|)+(?:\s*:?-{3,}:?\s*)?")
_TABLE_PIPES = re.compile(r"(?:\s*\|\s*)+")  # the end of a row and the start of the next: one
_HEADING_MARK = re.compile(r"(?:^|(?<=\s))#{1,6}(?=\s)")
_INLINE_MARKUP = re.compile(r"\*\*|__|`+")
_SPACES = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")


def plain_snippet(text: str | None) -> str:
    """The start of a chunk found by meaning alone (SQLite), escaped, cut at a word."""
    if not text:
        return ""
    text = snippet_text(text)
    if len(text) > 300:
        text = text[:300].rsplit(" ", 1)[0] + " …"
    return html.escape(text, quote=False)


def snippet_text(markdown: str) -> str:
    """A piece of a chunk's markdown as the words it reads as, on one line (what is dropped:
    the comment above ``_MARKDOWN_LINK``); the search markers pass through."""
    text = _MARKDOWN_LINK.sub(r"\1", markdown)
    if "|" in text:
        text = _TABLE_PIPES.sub(" · ", _TABLE_RULE.sub(" ", text))
    text = _INLINE_MARKUP.sub("", _HEADING_MARK.sub("", text))
    text = _SPACES.sub(" ", text).strip(" ·")
    return text


_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_MARKED = re.compile("\x02([^\x02\x03]*)\x03")


def marked_words(raw: str | None) -> set[str]:
    """The words the database marked in its snippet (the passage's own spelling)."""
    return {word.casefold() for word in _MARKED.findall(raw or "")}


def table_snippet(text: str, *, marked: set[str]) -> str | None:
    """For a passage holding a markdown table: its best row as "header: cell" pairs, the
    matched words between markers ("Method: \x02Card\x03 · Delay: 3-5 days"): the row with the
    most matched words, else the first. None when the passage has no table."""
    lines = text.splitlines()
    for start, line in enumerate(lines[:-1]):
        if _TABLE_LINE.match(line) and _TABLE_RULE.fullmatch(lines[start + 1].strip()):
            break
    else:
        return None
    header = _cells(lines[start])
    rows = []
    for line in lines[start + 2 :]:
        if not _TABLE_LINE.match(line):
            break
        rows.append(_cells(line))
    if not rows:
        return None
    wanted = {word.casefold() for word in marked if word}

    def hits(cells: list[str]) -> int:
        words = {word.casefold() for cell in cells for word in _WORDS.findall(cell)}
        return len(words & wanted)

    best = max(rows, key=hits)  # the first of the best: max keeps the earliest
    pairs = []
    for index, cell in enumerate(best):
        name = header[index] if index < len(header) and header[index] else ""
        pairs.append(f"{name}: {_mark(cell, wanted)}" if name else _mark(cell, wanted))
    return " · ".join(pairs)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _mark(cell: str, wanted: set[str]) -> str:
    if not wanted:
        return cell
    return _WORDS.sub(
        lambda match: (
            f"\x02{match.group(0)}\x03" if match.group(0).casefold() in wanted else match.group(0)
        ),
        cell,
    )


def plain_heading(heading: str) -> str:
    """A heading as text: a link keeps its text, emphasis and code marks go."""
    text = _INLINE_MARKUP.sub("", _MARKDOWN_LINK.sub(r"\1", heading))
    return _SPACES.sub(" ", text).strip()


def render_snippet(raw: str | None) -> str:
    """The snippet's text without markdown syntax, escaped, the database's markers turned
    into <mark> tags."""
    if not raw:
        return ""
    escaped = html.escape(snippet_text(raw), quote=False)
    # Unbalanced markers (a fragment cut inside one) are dropped rather than left open.
    parts = re.split(f"({_START}|{_STOP})", escaped)
    out: list[str] = []
    open_mark = False
    for part in parts:
        if part == _START and not open_mark:
            out.append("<mark>")
            open_mark = True
        elif part == _STOP and open_mark:
            out.append("</mark>")
            open_mark = False
        elif part not in (_START, _STOP):
            out.append(part)
    if open_mark:
        out.append("</mark>")
    return _CONTROL_MARKERS.sub("", "".join(out))
