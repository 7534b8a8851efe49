"""What keyword search indexes and asks: passage languages, CJK bigrams, parsed queries.

Both databases index the same text. A passage's language is detected on the passage itself
(`passage_config`), falling back to its document's, so a mixed English/Spanish document is
stemmed per passage. Chinese, Japanese and Korean have no spaces between words (Korean glues
particles to its words), so every run of such characters is indexed as its overlapping pairs of
characters ("東京都" -> "東京 京都"), and a query is cut the same way: any two characters of
the question found side by side in a passage count as a matched term (`cjk_bigrams`). Thai,
Lao, Khmer and Myanmar, also written without spaces, are cut into pairs too.

A query is a bag of optional words (any of them may match; BM25 ranks the passages holding more
and rarer ones first), plus the websearch syntax kept from before: a "quoted phrase" must
appear as such, and -word excludes passages holding the word (`parse_query`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# py3langid codes -> PostgreSQL text search configurations (PostgreSQL 15 ships these).
# Anything else, CJK included, is indexed with "simple" (lower-cased words, no stemming).
LANGUAGE_CONFIGS = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "nb": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
SEARCH_CONFIGS = frozenset(LANGUAGE_CONFIGS.values()) | {"simple"}

# Detection reads this much of a text and trusts only a confident answer on enough letters.
_DETECT_CHARS = 20_000
_DOCUMENT_MIN_LETTERS = 40
_DOCUMENT_MIN_PROBABILITY = 0.9
# A passage is shorter than a document: it needs fewer letters, and its own answer wins over
# the document's only when the detector is sure of it.
_PASSAGE_MIN_LETTERS = 60
_PASSAGE_MIN_PROBABILITY = 0.95
_MARKUP = re.compile(r"[#*_`>|\[\]()!-]+|https?://\S+")

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
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")

_identifiers: dict[bool, Any] = {}  # py3langid LanguageIdentifier, per language set
_identifier_lock = threading.Lock()


def _classify(sample: str, *, stemmed_only: bool = False) -> tuple[str, float]:
    """py3langid's language and probability; `stemmed_only` chooses among the languages of
    LANGUAGE_CONFIGS alone (those py3langid knows), so the probability is not spread over the
    ninety-odd others."""
    with _identifier_lock:
        identifier = _identifiers.get(stemmed_only)
        if identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            if stemmed_only:
                known = set(identifier.nb_classes)
                identifier.set_languages(sorted(set(LANGUAGE_CONFIGS) & known))
            _identifiers[stemmed_only] = identifier
        code, probability = identifier.classify(sample)
    return code, float(probability)


def query_language(query: str) -> tuple[str, float]:
    """The language py3langid gives a query (ISO 639-1), among the languages the search stems
    (LANGUAGE_CONFIGS), and its probability: short questions are often unsure, so callers
    weigh the probability. Chosen among all of py3langid's ninety-odd languages, a short
    Spanish question ("¿Cuántos goles marcó Messi en 2022?") was Spanish with 0.39 only, the
    rest spread over languages no passage is stemmed in."""
    return _classify(_MARKUP.sub(" ", query[:_DETECT_CHARS]), stemmed_only=True)


def detect_language(markdown: str) -> str:
    """The text search configuration of a document's text: its language when py3langid is
    confident, else "simple" (which also serves Chinese, Japanese and Korean)."""
    sample = _MARKUP.sub(" ", markdown[:_DETECT_CHARS])
    if sum(character.isalpha() for character in sample) < _DOCUMENT_MIN_LETTERS:
        return "simple"
    code, probability = _classify(sample)
    if probability < _DOCUMENT_MIN_PROBABILITY:
        return "simple"
    return LANGUAGE_CONFIGS.get(code, "simple")


def passage_config(text: str, *, document_config: str) -> str:
    """The configuration of one passage: its own language when it says so clearly, else its
    document's. Text that is mostly CJK is indexed with "simple" (as bigrams)."""
    sample = _MARKUP.sub(" ", text[:_DETECT_CHARS])
    letters = sum(character.isalpha() for character in sample)
    if letters < _PASSAGE_MIN_LETTERS:
        return document_config
    if len(_CJK_CHAR.findall(sample)) * 2 > letters:
        return "simple"
    code, probability = _classify(sample)
    if probability < _PASSAGE_MIN_PROBABILITY:
        return document_config
    return LANGUAGE_CONFIGS.get(code, "simple")


def has_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


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


# --- short texts: messages and steps ---------------------------------------------------------

# The configuration of a script's main language, for text too short (or too mixed) for the
# detector: its words are still stemmed as that language's are, and a query in that script is
# stemmed the same way (`script_config`). Latin script falls back to English.
_SCRIPT_CONFIGS = (
    ("russian", re.compile("[\u0400-\u04ff]")),
    ("arabic", re.compile("[\u0600-\u06ff\u0750-\u077f]")),
    ("greek", re.compile("[\u0370-\u03ff]")),
    ("hindi", re.compile("[\u0900-\u097f]")),
    ("tamil", re.compile("[\u0b80-\u0bff]")),
    ("armenian", re.compile("[\u0530-\u058f]")),
    ("english", re.compile("[A-Za-z\u00c0-\u024f]")),
)
_SCRIPT_SAMPLE = 1000
_ASCII_LETTER = re.compile("[A-Za-z]")


def script_config(text: str) -> str:
    """The configuration of the script most of a text's letters are written in (CJK, Thai and
    scripts without a stemmer: "simple"). Regular expressions over the first thousand
    characters: cheap enough for every step of an OpenTelemetry batch, where the detector's
    40 µs a text would cost a third of the recording's time."""
    sample = text[:_SCRIPT_SAMPLE]
    if sample.isascii():  # most steps: one pass in C
        return "english" if _ASCII_LETTER.search(sample) else "simple"
    best, best_count = "simple", 0
    for config, letters in _SCRIPT_CONFIGS:
        count = len(letters.findall(sample))
        if count > best_count:
            best, best_count = config, count
    if best_count and len(_CJK_CHAR.findall(sample)) > best_count:
        return "simple"
    return best


def text_config(text: str, *, detect: bool = True) -> str:
    """The configuration a message or step is indexed with: its language when `detect` and the
    detector is confident (as `detect_language`), else its script's (`script_config`)."""
    if detect:
        language = detect_language(text)
        if language != "simple":
            return language
    return script_config(text)


def query_configs(query: str) -> list[str]:
    """The configurations a short-text query is stemmed with, each alternative ORed: "simple"
    (the words as written), its script's, and the language the detector gives it when fairly
    sure (a text indexed in that language was detected as such)."""
    configs = ["simple", script_config(query)]
    if configs[1] == "english":
        code, probability = query_language(query)
        if probability >= 0.5 and code in LANGUAGE_CONFIGS:
            configs.append(LANGUAGE_CONFIGS[code])
    return list(dict.fromkeys(configs))


@dataclass(frozen=True)
class QueryGroup:
    """One term of a short-text query: a word, or words that must stand side by side (a
    "quoted phrase", a CJK run cut into pairs, "e-mail"); `excluded` for -word."""

    text: str
    excluded: bool = False

    @property
    def is_phrase(self) -> bool:
        return " " in self.text


def query_groups(query: str) -> list[QueryGroup]:
    """A query's terms as word search ANDs them (websearch syntax: "phrase", -word, `or`
    dropped), each term's text already cut as the index is (CJK pairs)."""
    groups: list[QueryGroup] = []
    for match in _TERM.finditer(query):
        negate, phrase, bare = match.group(1), match.group(2), match.group(3)
        if bare is not None:
            if bare.lower() == "or":
                continue
            negate = "-" if bare.startswith("-") and len(bare) > 1 else ""
            phrase = bare[1:] if negate else bare
        # As typed ("A-42", "gpt-4.1"): the database's parser reads the query as it read the
        # text. A term without a letter or digit is no term.
        text = " ".join(cjk_bigrams(phrase or "").split())
        if _WORD.search(text):
            groups.append(QueryGroup(text, excluded=bool(negate)))
    return list(dict.fromkeys(groups))


def marked_html(snippet: str) -> str:
    """A `highlight` snippet as HTML: the text escaped, its markers made <mark> tags."""
    import html

    return html.escape(snippet).replace("\x02", "<mark>").replace("\x03", "</mark>")


# --- queries -------------------------------------------------------------------------------

_TERM = re.compile(r'(-?)"([^"]*)"|(\S+)')
_WORD_IN_TEXT = re.compile(r"[^\W\d_][\w'-]*|\d[\w.,-]*")
# Words with their combining marks: Python's \w leaves out the vowel signs of Indic and Thai
# scripts and Arabic/Hebrew points, which cut "दिल्ली" into "द ल ल" (no such term is indexed).
_WORD = re.compile(
    r"(?:\w|[\u0300-\u036f\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670"
    r"\u0900-\u0dff\u0e00-\u0e7f])+"
)


@dataclass(frozen=True)
class ParsedQuery:
    """A query as keyword search uses it; CJK runs are already cut into bigrams."""

    words: str  # every positive word, phrases' words included, space-separated
    phrases: list[str] = field(default_factory=list)  # each must appear as such
    excluded: list[str] = field(default_factory=list)  # passages with these are dropped

    @property
    def is_empty(self) -> bool:
        return not self.words.strip()


def parse_query(query: str) -> ParsedQuery:
    """Split websearch syntax: bare words (optional, ranked), "phrases" (required), -word
    (excluded), `or` between words (the default anyway, so it is just dropped)."""
    words: list[str] = []
    phrases: list[str] = []
    excluded: list[str] = []
    for match in _TERM.finditer(query):
        negate, phrase, bare = match.group(1), match.group(2), match.group(3)
        quoted = phrase is not None
        if bare is not None:
            if bare.lower() == "or":
                continue
            negate = "-" if bare.startswith("-") and len(bare) > 1 else ""
            phrase = bare[1:] if negate else bare
        tokens = _WORD.findall(cjk_bigrams(phrase or ""))
        if not tokens:
            continue
        text = " ".join(tokens)
        if negate:
            excluded.append(text)
        else:
            words.append(text)
            if quoted and len(tokens) > 1:
                phrases.append(text)
    return ParsedQuery(words=" ".join(words), phrases=phrases, excluded=excluded)


def fts5_expression(query: str) -> str:
    """The query as an SQLite FTS5 expression: any word may match (OR; bm25() ranks), quoted
    phrases are required, -word excludes. Every term is quoted, so nothing a user types is
    FTS5 syntax."""
    parsed = parse_query(query)
    if parsed.is_empty:
        return ""
    # Stop words go as PostgreSQL's configurations drop them (all of them if nothing else).
    words = content_words(parsed.words, ENGLISH_STOP_WORDS | query_stop_words(query))
    terms = list(dict.fromkeys(f'"{word}"' for word in words.split()))
    expression = " OR ".join(terms)
    if len(terms) > 1:
        expression = f"({expression})"
    for phrase in parsed.phrases:
        expression = f'{expression} AND "{phrase}"'
    for word in parsed.excluded:
        expression = f'{expression} NOT "{word}"'
    return expression


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


# --- stop words of the query's language -------------------------------------------------------

# PostgreSQL's configurations for Arabic, Hindi, Greek (and "simple", which CJK text uses) have
# no stop list, so a question's commonest words ("ما هو", "कैसा", "の", "什么") counted as content
# and an unrelated question in such a language found passages holding them. Lists of the
# `stop-words` project, kept in `stop_words/` (its README), fill in, chosen by the query's script.
_STOP_WORDS_DIR = Path(__file__).resolve().parent / "stop_words"
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


def warm_up() -> None:
    """Load what the first search of a process would otherwise load (the language identifiers,
    the stop lists): 0.7-2.4 s that the first keyword search used to pay."""
    _classify("warm up", stemmed_only=True)  # a query's language (ingestion uses the other)
    for languages in _SCRIPT_STOP_LISTS.values():
        for language in languages:
            _stop_list(language)


def warm_up_in_background() -> None:
    """`warm_up` in a daemon thread: a web process starts answering at once, and its first
    search finds the identifiers loaded (or waits on their lock for the rest of the load)."""
    threading.Thread(target=warm_up, name="lexical-warm-up", daemon=True).start()
