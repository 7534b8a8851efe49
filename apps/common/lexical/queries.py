"""A query's terms, as keyword search (any word may match) and word search (every word must)
read them.

A query is a bag of optional words (any of them may match; BM25 ranks the passages holding more
and rarer ones first), plus the websearch syntax kept from before: a "quoted phrase" must
appear as such, and -word excludes passages holding the word (`parse_query`). Word search
ANDs the same terms (`query_groups`). CJK runs are cut into pairs as the index is.
"""

import re
from dataclasses import dataclass, field

from apps.common.lexical.cjk import cjk_bigrams
from apps.common.lexical.stop_words import ENGLISH_STOP_WORDS, content_words, query_stop_words

_TERM = re.compile(r'(-?)"([^"]*)"|(\S+)')
# Words with their combining marks: Python's \w leaves out the vowel signs of Indic and Thai
# scripts and Arabic/Hebrew points, which cut "दिल्ली" into "द ल ल" (no such term is indexed).
_WORD = re.compile(
    r"(?:\w|[\u0300-\u036f\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670"
    r"\u0900-\u0dff\u0e00-\u0e7f])+"
)


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
