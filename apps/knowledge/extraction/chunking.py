"""Cut markdown into chunks for search, by headings first and by size second.

* Every ATX (``## x``) or setext heading starts a section; a chunk's ``heading_path`` is the
  headings that enclose it, outermost first, and its text starts with its own heading line.
  Lines inside fenced code blocks are never headings.
* A section with nothing but its heading gives no chunk: its title lives on in the
  ``heading_path`` of the sections under it.
* A section longer than ``max_chars`` is split between blocks (paragraphs, lists, tables, code
  blocks), packing as many whole blocks per chunk as fit. A block that alone is too long is
  split by lines (a table repeats its header row in each piece, a code block is re-fenced),
  then by sentences, then at spaces.
* A title that is not a markdown heading (a plain-text document's "10.4.5 404 Not Found", a
  line in bold, a short line in capitals) never ends a chunk: it starts the next one, with the
  text it heads. In a section over ``max_chars``, every such title starts a new chunk, so a run
  of short definitions ("10.4.4 403 Forbidden", "10.4.5 404 Not Found", ...) is one passage per
  definition instead of five diluted in one; a list of definitions (``- **term**: ...``) over
  ``max_chars`` is split on its items into pieces of at most a quarter of it.
* Base64 ``data:`` URIs (images kept inline by an extractor) are replaced by a short
  placeholder (``data:image/png;base64,…``): they mean nothing to a search and cost a passage
  its room and its vectors.
* Chunks are never empty and, except for a single unbreakable word, never over ``max_chars``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

# The closing "###" of an ATX heading is removed in Python: a regex for it backtracks
# quadratically on long runs of spaces, and chunking runs on untrusted text outside the sandbox.
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TABLE_SEPARATOR = re.compile(r"^\s*+\|?\s*+:?-{3,}")  # possessive: no backtracking
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
# A base64 data URI (its payload at least 32 characters): replaced by its type and an ellipsis.
_DATA_URI = re.compile(
    r"(data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,)[A-Za-z0-9+/=]{32,}"
)
# Titles that are not markdown headings: a numbered one ("10.4.5 404 Not Found", "3. Scope",
# "A.2 Terms", "Section 4 Definitions"), a line in bold, a short line in capitals.
_NUMBERED_TITLE = re.compile(
    r"(?:\d{1,3}(?:\.\d{1,3})*\.?|[A-Z]\.\d{1,3}(?:\.\d{1,3})*\.?"
    r"|(?:Section|Chapter|Part|Appendix|Article|Annex)\s+[\dA-Z]{1,4}[.:]?)\s+\S.*"
)
_BOLD_TITLE = re.compile(r"(?:\*\*|__)[^*_\n]{2,}(?:\*\*|__):?")
_TITLE_MAX_CHARS = 100
# A list of definitions whose items average at most this many characters is split on its items.
_SHORT_DEFINITION_CHARS = 240
# A list item that defines a term: "- **term**: ...", "- term: ...", "* `name` - ...".
_DEFINITION_ITEM = re.compile(
    r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+(?:\*\*[^*\n]+\*\*|`[^`\n]+`|[^:\n]{1,60}):?\s"
)


@dataclass
class Chunk:
    heading_path: list[str]
    text: str
    position: int


@dataclass
class _Section:
    heading_path: list[str]
    lines: list[str] = field(default_factory=list)
    has_body: bool = False


def chunk_markdown(markdown: str, *, max_chars: int = 1800) -> list[Chunk]:
    if max_chars < 50:
        raise ValueError("max_chars must be at least 50")
    chunks: list[Chunk] = []
    markdown = without_data_uris(markdown.replace("\r\n", "\n").replace("\r", "\n"))
    for section in _sections(markdown):
        if not section.has_body:
            continue
        for text in _pack(_blocks(section.lines), max_chars):
            chunks.append(Chunk(list(section.heading_path), text, len(chunks)))
    return chunks


def _sections(markdown: str) -> list[_Section]:
    sections = [_Section([])]
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        current = sections[-1]
        fence_match = _FENCE.match(line)
        if fence is not None or fence_match:
            if fence is None:
                fence = fence_match.group(1) if fence_match else None
            elif fence_match and _closes(fence_match.group(1), fence):
                fence = None
            current.lines.append(line)
            current.has_body = True
            continue
        heading = _atx_heading(line)
        if heading is None and index < len(lines) and _starts_setext(line, lines[index], current):
            heading = (1 if lines[index].strip()[0] == "=" else 2, line.strip())
            index += 1  # the underline
        if heading is not None:
            level, title = heading
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            sections.append(_Section([t for _, t in stack], ["#" * level + " " + title]))
            continue
        current.lines.append(line)
        if line.strip():
            current.has_body = True
    return sections


def without_data_uris(text: str) -> str:
    """The text with every base64 data URI's payload replaced by an ellipsis."""
    if "base64," not in text:
        return text
    return _DATA_URI.sub(r"\1…", text)


def is_title(block: str) -> bool:
    """A block that titles what follows without being a markdown heading: one short line,
    numbered like a section ("10.4.5 404 Not Found"), or all in bold, or in capitals; not a
    sentence (it does not end with . , ; or !)."""
    line = block.strip()
    if not line or "\n" in line or len(line) > _TITLE_MAX_CHARS or line[-1] in ".,;!|":
        return False
    if line.startswith(("#", "|", ">", "-", "*", "+", "`", "!")) and not _BOLD_TITLE.fullmatch(
        line
    ):
        return False
    if _BOLD_TITLE.fullmatch(line):
        return True
    if _NUMBERED_TITLE.fullmatch(line):
        if ". " in line.split(maxsplit=1)[-1] or line.count(",") > 1:
            return False  # sentences inside: a numbered reference or list item
        # "2. Open the box" in a list is an item, not a title: a title is mostly capitalised
        # words or names ("404 Not Found", "Scope", "Terms and definitions").
        words = [word for word in line.split()[1:] if word[:1].isalpha()]
        return bool(words) and words[0][:1].isupper() and len(line.split()) <= 12
    letters = [character for character in line if character.isalpha()]
    return len(letters) >= 4 and all(character.isupper() for character in letters)


def _closes(marker: str, fence: str) -> bool:
    return marker[0] == fence[0] and len(marker) >= len(fence)


def _atx_heading(line: str) -> tuple[int, str] | None:
    match = _ATX.match(line)
    if not match:
        return None
    title = heading_title(match.group(2) or "")
    return (len(match.group(1)), title) if title else None


def heading_title(text: str) -> str:
    """An ATX heading's text without its optional closing hashes ("## Title ##" -> "Title")."""
    text = text.strip()
    stripped = text.rstrip("#")
    if stripped != text and (not stripped or stripped[-1] in " \t"):
        text = stripped.strip()
    return text


def _starts_setext(line: str, next_line: str, current: _Section) -> bool:
    """A one-line paragraph directly followed by === or --- (not a list, quote or table)."""
    return bool(
        _SETEXT.match(next_line)
        and line.strip()
        and len(line) - len(line.lstrip(" ")) <= 3  # deeper is an indented code block
        and not _TABLE_SEPARATOR.match(line)
        and not line.lstrip().startswith(("|", "-", "*", "+", ">", "<!--"))
        and (not current.lines or not current.lines[-1].strip())
    )


def _blocks(lines: list[str]) -> list[str]:
    """Split a section into blocks at blank lines, keeping fenced code blocks whole."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in lines:
        fence_match = _FENCE.match(line)
        if fence is None and fence_match:
            fence = fence_match.group(1)
        elif fence is not None and fence_match and _closes(fence_match.group(1), fence):
            fence = None
        if fence is None and not line.strip():
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _pack(blocks: list[str], max_chars: int) -> list[str]:
    # In a section over its size, each titled item is a passage of its own (see the module's
    # docstring); a title always travels with the text after it.
    oversize = sum(len(block) + 2 for block in blocks) > max_chars
    pieces: list[tuple[str, bool, bool]] = []  # (text, is a title, is a definitions piece)
    for block in blocks:
        if len(block) <= max_chars:
            pieces.append((block, is_title(block), False))
        elif oversize and _is_definition_list(block):
            room = max(max_chars // 4, 50)
            pieces.extend((piece, False, True) for piece in _split_lines(block.split("\n"), room))
        else:
            pieces.extend((piece, False, False) for piece in _split_block(block, max_chars))
    chunks: list[str] = []
    current = ""
    current_has_body = False
    for index, (piece, title, definitions) in enumerate(pieces):
        starts_item = current_has_body and (
            definitions
            or (
                title
                and oversize
                and index + 1 < len(pieces)
                # a short preamble joins the first item; a short item stays one of its own
                and (len(current) >= max_chars // 16 or is_title(current.split("\n\n", 1)[0]))
            )
        )
        if current and (len(current) + 2 + len(piece) > max_chars or starts_item):
            carried = ""
            if not starts_item:
                # Titles at the end of the chunk go with the text they head.
                kept = current.split("\n\n")
                tail: list[str] = []
                while len(kept) > 1 and is_title(kept[-1]):
                    tail.insert(0, kept.pop())
                if tail and len("\n\n".join([*tail, piece])) <= max_chars:
                    current, carried = "\n\n".join(kept), "\n\n".join(tail)
            chunks.append(current)
            current = f"{carried}\n\n{piece}" if carried else piece
            current_has_body = not title or bool(carried)
        else:
            current = f"{current}\n\n{piece}" if current else piece
            current_has_body = current_has_body or not title
    if current.strip():
        chunks.append(current)
    return [chunk for chunk in chunks if chunk.strip()]


def _is_definition_list(block: str) -> bool:
    """A list most of whose items define a term ("- **404 Not Found**: the server ...")."""
    lines = [line for line in block.split("\n") if line.strip()]
    items = [line for line in lines if _DEFINITION_ITEM.match(line)]
    if len(items) < 3 or len(items) * 2 < len(lines):
        return False
    # Short ones: long items (a JSON outline's records) are passages enough on their own.
    return sum(len(line) for line in lines) <= _SHORT_DEFINITION_CHARS * len(items)


def _split_block(block: str, max_chars: int) -> list[str]:
    lines = block.split("\n")
    frame_limit = max_chars // 2  # a header or fence repeated in every piece must leave room
    is_table = len(lines) >= 3 and lines[0].lstrip().startswith("|")
    if (
        is_table
        and _TABLE_SEPARATOR.match(lines[1])
        and len(lines[0]) + len(lines[1]) < frame_limit
    ):
        return _split_lines(lines[2:], max_chars, prefix=lines[:2])
    fence = _FENCE.match(lines[0])
    if fence and len(lines) >= 3 and len(lines[0]) < frame_limit // 2:
        closed = _FENCE.match(lines[-1]) is not None
        body = lines[1:-1] if closed else lines[1:]
        closing = lines[-1] if closed else fence.group(1)
        return _split_lines(body, max_chars, prefix=[lines[0]], suffix=[closing])
    return _split_lines(lines, max_chars)


def _split_lines(
    lines: list[str],
    max_chars: int,
    *,
    prefix: Sequence[str] = (),
    suffix: Sequence[str] = (),
) -> list[str]:
    """Pack lines into pieces under max_chars, each wrapped in prefix and suffix lines."""
    frame = sum(len(line) + 1 for line in (*prefix, *suffix))
    room = max_chars - frame
    units: list[str] = []
    for line in lines:
        units.extend(_split_long_line(line, room) if len(line) > room else [line])
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for unit in units:
        if current and size + len(unit) + 1 > room:
            pieces.append("\n".join([*prefix, *current, *suffix]))
            current, size = [], 0
        current.append(unit)
        size += len(unit) + 1
    if current:
        pieces.append("\n".join([*prefix, *current, *suffix]))
    return pieces


def _split_long_line(line: str, room: int) -> list[str]:
    """Split a line by sentences, then at spaces, then hard."""
    parts: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(line):
        for word in _words(sentence, room):
            joined = f"{current} {word}" if current else word
            if len(joined) > room and current:
                parts.append(current)
                current = word
            else:
                current = joined
    if current:
        parts.append(current)
    return parts


def _words(sentence: str, room: int) -> list[str]:
    if len(sentence) <= room:
        return [sentence]
    words: list[str] = []
    for word in sentence.split(" "):
        while len(word) > room:  # no space to break at (CJK text, long tokens)
            words.append(word[:room])
            word = word[room:]
        if word:
            words.append(word)
    return words
