"""Put right-to-left lines drawn word by word in visual order back into reading order.

Some writers draw each word of an Arabic or Hebrew line as its own text object, from the
leftmost word to the rightmost. pypdf fixes the letters inside each word but keeps the words in
drawing order, so a line reads last word first ("world hello" for "hello world", often glued
together). From the words' positions (``pdf_tables.Fragment``) we find such lines: mostly
right-to-left letters, two or more words, each drawn to the right of the one before. Their
words are reordered as the Unicode bidirectional algorithm orders a right-to-left paragraph,
applied to whole words (rules W1-W7 resolve numbers and Latin to left-to-right runs, L2
reverses): right-to-left words read from right to left, while a run of Latin words or numbers
inside the line keeps its left-to-right order. A line drawn from right to left is already in
reading order and is left alone, as is a line whose drawn text we cannot find in pypdf's.
"""

from __future__ import annotations

import unicodedata

from .pdf_tables import Fragment

_SAME_LINE = 2.0  # points


def reading_order(text: str, fragments: list[Fragment]) -> str:
    """``text`` with its visually ordered right-to-left lines in reading order."""
    for line in _lines(fragments):
        words = [fragment.text.strip() for fragment in line]
        positions = [fragment.x for fragment in line]
        if len(words) < 2 or not _mostly_right_to_left("".join(words)):
            continue
        if not all(left < right for left, right in zip(positions, positions[1:], strict=False)):
            continue
        logical = " ".join(_logical(words))
        for drawn in (" ".join(words), "".join(words)):
            if drawn in text:
                text = text.replace(drawn, logical, 1)
                break
    return text


def _lines(fragments: list[Fragment]) -> list[list[Fragment]]:
    """Runs of consecutive fragments on the same baseline, in drawing order."""
    lines: list[list[Fragment]] = []
    for fragment in fragments:
        if not fragment.text.strip():
            continue
        if lines and abs(lines[-1][-1].y - fragment.y) <= _SAME_LINE:
            lines[-1].append(fragment)
        else:
            lines.append([fragment])
    return lines


def _direction(word: str) -> str:
    """ "R" for a word with right-to-left letters, "L" for one with other letters, else "N"."""
    classes = {unicodedata.bidirectional(character) for character in word}
    if classes & {"R", "AL"}:
        return "R"
    return "L" if "L" in classes else "N"


def _mostly_right_to_left(text: str) -> bool:
    classes = [unicodedata.bidirectional(character) for character in text]
    right = sum(1 for value in classes if value in ("R", "AL"))
    return right > sum(1 for value in classes if value == "L")


def _logical(visual: list[str]) -> list[str]:
    # Reversing the line gives right-to-left reading order; each run of left-to-right words
    # (Latin, numbers) inside it is then reversed back so it reads left to right.
    reversed_words = visual[::-1]
    logical: list[str] = []
    run: list[str] = []
    for word in reversed_words:
        if _direction(word) == "R":
            logical.extend(run[::-1])
            run = []
            logical.append(word)
        else:
            run.append(word)
    logical.extend(run[::-1])
    return logical
