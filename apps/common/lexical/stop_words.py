"""Stop words of a query's language: words that are not looked up and do not count.

PostgreSQL's configurations drop their own language's stop words. Kept here: the Snowball English
list (PostgreSQL's `english` one) for where PostgreSQL does not apply it (SQLite's FTS5
expression, word search's terms, the highlighted words), and the lists of the scripts
PostgreSQL keeps none for (`apps/common/stop_words/`, its README).
"""

from pathlib import Path

from apps.common.lexical.cjk import has_cjk

# PostgreSQL's configurations for Arabic, Hindi, Greek (and "simple", which CJK text uses) have
# no stop list, so a question's commonest words ("ما هو", "कैसा", "の", "什么") counted as content
# and an unrelated question in such a language found passages holding them. Lists of the
# `stop-words` project, kept in `apps/common/stop_words/`, fill in, chosen by the query's script.
_STOP_WORDS_DIR = Path(__file__).resolve().parents[1] / "stop_words"
_SCRIPT_STOP_LISTS = {
    "ARABIC": ("arabic", "persian"),
    "HEBREW": ("hebrew",),
    "DEVANAGARI": ("hindi",),
    "GUJARATI": ("gujarati",),
    "GREEK": ("greek",),
    "HANGUL": ("korean",),
    "HIRAGANA": ("japanese",),
    "KATAKANA": ("japanese",),
    "CJK": ("chinese", "japanese"),
    "CYRILLIC": ("russian", "ukrainian", "bulgarian"),
}
# The Snowball English list (PostgreSQL's `english` stop words): not highlighted as matches.
ENGLISH_STOP_WORDS = frozenset(
    [
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "should",
        "now",
    ]
)
# Question words those lists lack: a question's own frame, not what it asks about.
_QUESTION_WORDS = {
    "arabic": "هل كيف متى أين اين ماذا لماذا كم أي اي ماهو ماهي",
    "hindi": "क्या कौन कब कहाँ कहां कैसे कैसा कैसी क्यों कितना कितने कितनी है हैं",
    "chinese": "什么 吗 呢 哪 哪里 哪儿 怎么 怎样 为什么 多少 几 是 谁",
    "japanese": "ですか ますか 何 どこ いつ だれ 誰 どう なぜ どれ どの いくら か",
    "korean": "무엇 뭐 어디 언제 누구 어떻게 왜 얼마 몇 어떤",
}
_ARABIC_FOLD = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ى": "ي", "ة": "ه", "ـ": None})
_stop_lists: dict[str, frozenset[str]] = {}


def _script_names(text: str) -> set[str]:
    import unicodedata

    names = set()
    for character in text:
        if character.isalpha():
            name = unicodedata.name(character, "")
            names.add(name.split(" ", 1)[0] if not name.startswith("CJK") else "CJK")
    return names


def _stop_list(language: str) -> frozenset[str]:
    words = _stop_lists.get(language)
    if words is None:
        path = _STOP_WORDS_DIR / f"{language}.txt"
        lines = path.read_text(encoding="utf-8").splitlines()
        listed = [
            *(line.strip() for line in lines if line.strip()),
            *_QUESTION_WORDS.get(language, "").split(),
        ]
        words = frozenset(_fold(word) for word in listed)
        _stop_lists[language] = words
    return words


def _fold(word: str) -> str:
    """A word as stop lists are compared: case-folded, Arabic alef and yeh forms made one
    ("إلى" and "الى" alike)."""
    return word.casefold().translate(_ARABIC_FOLD)


def query_stop_words(query: str) -> frozenset[str]:
    """Stop words of the scripts a query is written in that PostgreSQL's configurations do not
    drop (see ``_SCRIPT_STOP_LISTS``); empty for a Latin-script query."""
    words: set[str] = set()
    for script in _script_names(query):
        for language in _SCRIPT_STOP_LISTS.get(script, ()):
            words |= _stop_list(language)
    return frozenset(words)


# Characters that are particles wherever they stand: hiragana particles between Japanese words,
# Chinese sentence particles. A CJK pair holding one is no word ("の天" of "明日の天気").
_PARTICLES = frozenset("のはがをにでともかへやよねな的了吗呢吧么")


def _is_particle(character: str) -> bool:
    return character in _PARTICLES


def content_words(words: str, stop: frozenset[str]) -> str:
    """A parsed query's words without its stop words: a word in `stop`, and a CJK pair holding
    a particle ("の天" of "明日の天気"). A query made of stop words only keeps them all."""
    if not stop:
        return words
    kept = []
    for word in words.split():
        folded = _fold(word)
        if folded in stop:
            continue
        if has_cjk(word) and len(word) == 2 and (_is_particle(word[0]) or _is_particle(word[1])):
            continue
        kept.append(word)
    return " ".join(kept) if kept else words


def stop_lists_load() -> None:
    """Read every stop list from its file now rather than on the first query needing it."""
    for languages in _SCRIPT_STOP_LISTS.values():
        for language in languages:
            _stop_list(language)
