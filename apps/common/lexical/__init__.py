"""What keyword search indexes and asks, shared by knowledge search and activity's word search,
one module per subject:

- `languages`: the text search configuration a document, passage, message or step is indexed
  with (its detected language, else its script's) and the ones a query is stemmed with;
- `cjk`: text written without spaces (Chinese, Japanese, Korean, Thai, Lao, Khmer, Myanmar)
  cut into overlapping pairs of characters, as indexed and as asked;
- `queries`: a query's words, "phrases" and -words (websearch syntax), and its FTS5 form;
- `stop_words`: the stop words of a query's language and script, left out of what is asked;
- `highlighting`: a passage's snippet with the query's words marked.

Callers import from `apps.common.lexical`; the names below are the package's public face.
"""

import threading

from apps.common.lexical.cjk import cjk_bigrams, has_cjk, index_text
from apps.common.lexical.highlighting import highlight, marked_html
from apps.common.lexical.languages import (
    LANGUAGE_CONFIGS,
    SEARCH_CONFIGS,
    detect_language,
    passage_config,
    query_configs,
    query_language,
    script_config,
    text_config,
)
from apps.common.lexical.queries import (
    ParsedQuery,
    QueryGroup,
    fts5_expression,
    parse_query,
    query_groups,
)
from apps.common.lexical.stop_words import (
    ENGLISH_STOP_WORDS,
    content_words,
    query_stop_words,
    stop_lists_load,
)

__all__ = [
    "ENGLISH_STOP_WORDS",
    "LANGUAGE_CONFIGS",
    "SEARCH_CONFIGS",
    "ParsedQuery",
    "QueryGroup",
    "cjk_bigrams",
    "content_words",
    "detect_language",
    "fts5_expression",
    "has_cjk",
    "highlight",
    "index_text",
    "marked_html",
    "parse_query",
    "passage_config",
    "query_configs",
    "query_groups",
    "query_language",
    "query_stop_words",
    "script_config",
    "text_config",
    "warm_up",
    "warm_up_in_background",
]


def warm_up() -> None:
    """Load what the first search of a process would otherwise load (the language identifiers,
    the stop lists): 0.7-2.4 s that the first keyword search used to pay."""
    query_language("warm up")  # a query's language (ingestion uses the other identifier)
    stop_lists_load()


def warm_up_in_background() -> None:
    """`warm_up` in a daemon thread: a web process starts answering at once, and its first
    search finds the identifiers loaded (or waits on their lock for the rest of the load)."""
    threading.Thread(target=warm_up, name="lexical-warm-up", daemon=True).start()
