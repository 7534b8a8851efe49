"""A passage's snippet with the query's words marked: what a search result shows."""

import re

from apps.common.lexical.cjk import has_cjk

_WORD_IN_TEXT = re.compile(r"[^\W\d_][\w'-]*|\d[\w.,-]*")
# Characters of context a highlighted CJK snippet shows before its first match, and in all.
_HIGHLIGHT_BEFORE = 60
_HIGHLIGHT_LENGTH = 240


def highlight(text: str, words: str, *, stems: tuple[str, ...] | list[str] = ()) -> str:
    """A snippet of a passage with the query's words between the \x02/\x03 markers that
    render_snippet turns into <mark> tags: CJK pairs wherever they occur (overlapping pairs make
    one mark: "東京 京都" -> 東京都), other words whole and case-insensitively, and words that
    start with one of `stems` (the query's index terms: "refund" marks "refunds", "polici"
    marks "policies"). The snippet is the window of the passage holding the most distinct
    matched words."""
    tokens = list(dict.fromkeys(words.split()))
    whole = {token.casefold() for token in tokens if not has_cjk(token)}
    prefixes = tuple(stem for stem in dict.fromkeys(stems) if len(stem) >= 3 and not has_cjk(stem))
    found: list[tuple[int, int]] = [
        match.span()
        for match in _WORD_IN_TEXT.finditer(text)
        if (word := match.group(0).casefold()) in whole or word.startswith(prefixes or ("\x00",))
    ]
    pairs = [re.escape(token) for token in tokens if has_cjk(token)]
    if pairs:
        # A lookahead finds overlapping matches: 東京 and 京都 in 東京都.
        finder = re.compile(f"(?=({'|'.join(pairs)}))")
        found += [(match.start(1), match.end(1)) for match in finder.finditer(text)]
    spans: list[list[int]] = []
    for start, end in sorted(found):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    begin = _best_window(text, spans)
    finish = min(len(text), begin + _HIGHLIGHT_LENGTH)
    if finish < len(text):  # end at a space rather than inside a word
        space = text.rfind(" ", begin, finish)
        finish = space if space > begin + _HIGHLIGHT_LENGTH // 2 else finish
    out = ["… " if begin else ""]
    cursor = begin
    for start, end in spans:
        if end <= begin:
            continue
        if start >= finish:
            break
        start, end = max(start, begin), min(end, finish)
        out += [text[cursor:start], "\x02", text[start:end], "\x03"]
        cursor = end
    out.append(text[cursor:finish])
    if finish < len(text):
        out.append(" …")
    return "".join(out)


def _best_window(text: str, spans: list[list[int]]) -> int:
    """Where the snippet starts: a little before the match that opens the window with the most
    matched words (the first such), at a word boundary."""
    if not spans:
        return 0
    width = _HIGHLIGHT_LENGTH - _HIGHLIGHT_BEFORE
    best, best_count, last = spans[0][0], 0, 0
    for first, (start, _) in enumerate(spans):  # two pointers: spans are sorted
        last = max(last, first)
        while last + 1 < len(spans) and spans[last + 1][0] < start + width:
            last += 1
        if last - first + 1 > best_count:
            best, best_count = start, last - first + 1
    begin = max(0, best - _HIGHLIGHT_BEFORE)
    if begin:
        space = text.find(" ", begin, best)
        begin = space + 1 if space != -1 else begin
    return begin


def marked_html(snippet: str) -> str:
    """A `highlight` snippet as HTML: the text escaped, its markers made <mark> tags."""
    import html

    return html.escape(snippet).replace("\x02", "<mark>").replace("\x03", "</mark>")
