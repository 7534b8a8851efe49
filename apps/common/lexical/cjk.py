"""Text written without spaces between words, cut into overlapping pairs of characters.

Chinese, Japanese and Korean have no spaces between words (Korean glues particles to its
words), so every run of such characters is indexed as its overlapping pairs of characters
("東京都" -> "東京 京都"), and a query is cut the same way: any two characters of the question
found side by side in a passage count as a matched term (`cjk_bigrams`). Thai, Lao, Khmer and
Myanmar, also written without spaces, are cut into pairs too.
"""

import re

# Han (with extension A and compatibility ideographs), Hiragana, Katakana (with the phonetic
# extensions and half-width forms) and Hangul (syllables and jamo); and the other scripts
# written without spaces between words, Thai, Lao, Khmer and Myanmar, cut the same way (a
# Thai sentence was one "word" that no question matched).
_CJK_CLASS = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uff66-\uff9f\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")


def has_cjk(text: str) -> bool:
    return CJK_CHAR.search(text) is not None


def cjk_bigrams(text: str) -> str:
    """The text with every CJK run replaced by its overlapping character pairs (a single
    character stays itself); other text is left as it is."""

    def pairs(match: re.Match[str]) -> str:
        run = match.group(0)
        if len(run) < 2:
            return f" {run} "
        return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "

    return _CJK_RUN.sub(pairs, text)


def index_text(text: str) -> str | None:
    """What the keyword index reads for a passage, when it differs from the passage's text
    (text with CJK characters); None otherwise, so nothing extra is stored."""
    return cjk_bigrams(text) if has_cjk(text) else None
