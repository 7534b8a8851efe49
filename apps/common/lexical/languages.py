"""The text search configuration a text is indexed and a query is stemmed with.

A document's language is detected on its text (`detect_language`), a passage's on the passage
itself, falling back to its document's (`passage_config`), so a mixed English/Spanish document
is stemmed per passage. A message or step, often too short for the detector, falls back to its
script's language (`text_config`, `script_config`); a short-text query is stemmed every way its
text may have been indexed (`query_configs`).
"""

import copy
import re
import threading
from typing import Any

from apps.common.lexical.cjk import CJK_CHAR

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

_identifiers: dict[bool, Any] = {}  # py3langid LanguageIdentifier, per language set
_identifier_lock = threading.Lock()


def _classify(sample: str, *, stemmed_only: bool = False) -> tuple[str, float]:
    """py3langid's language and probability; `stemmed_only` chooses among the languages of
    LANGUAGE_CONFIGS alone (those py3langid knows), so the probability is not spread over the
    ninety-odd others."""
    with _identifier_lock:
        identifier = _identifiers.get(stemmed_only)
        if identifier is None:
            identifier = _identifier_load(stemmed_only)
        code, probability = identifier.classify(sample)
    return code, float(probability)


def _identifier_load(stemmed_only: bool) -> Any:
    """Load an identifier (the caller holds the lock). The model file is decompressed once
    (0.6 s of CPU): the restricted identifier is a shallow copy of the full one, and
    `set_languages` gives the copy its own subset arrays, leaving the full model as it was."""
    full = _identifiers.get(False)
    if full is None:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        full = _identifiers[False] = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    if not stemmed_only:
        return full
    restricted = copy.copy(full)
    restricted.set_languages(sorted(set(LANGUAGE_CONFIGS) & set(full.nb_classes)))
    _identifiers[True] = restricted
    return restricted


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
    if len(CJK_CHAR.findall(sample)) * 2 > letters:
        return "simple"
    code, probability = _classify(sample)
    if probability < _PASSAGE_MIN_PROBABILITY:
        return document_config
    return LANGUAGE_CONFIGS.get(code, "simple")


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
    if best_count and len(CJK_CHAR.findall(sample)) > best_count:
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
