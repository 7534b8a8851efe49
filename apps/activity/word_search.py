"""Word search over what was said: messages (conversations) and step inputs/outputs (runs).

Reads only; the index is written with the recording (apps.activity.search_index).

A query is websearch syntax (apps.common.lexical.query_groups): every word must match, "a
phrase" must appear as such, -word excludes. On PostgreSQL each word is looked up as written
(`simple`) and as stemmed by the configurations the query may be written in (its script's, and
its detected language's), ORed, against the rows' stored `search_vector` (GIN index); a word
that a stemming configuration drops is a stop word and is not required. On SQLite the FTS5
tables match the words as written (no stemming).

Ranking is bounded: the newest CANDIDATES matching rows (by recording order) are ranked by
`ts_rank_cd` (FTS5's bm25 on SQLite), so a word found in half the messages costs the same as a
rare one; a conversation (a run) ranks by its best message (step). On PostgreSQL they are found
in two steps whose cost the planner's estimates cannot spoil: the Agent's newest RECENT_WINDOW
rows read backwards (a common word fills the candidates there), then, when that found fewer,
the GIN index alone for the older rows (a rarer word has fewer matches to fetch). Pages of a ranked list are
cut by an offset-free cursor holding the last item's rank and id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from apps.activity.models import Message, RunStep
from apps.activity.search_index import message_text, step_text
from apps.common import lexical
from apps.common.errors import BadRequest
from apps.common.keyset import Keyset, PageRequest, cursor_decode, cursor_encode
from apps.workspaces.models import Agent

# Matching rows ranked at most, newest first: past it, older matches are not looked at.
CANDIDATES = 100
# The Agent's newest rows read first for matches (module docstring of _candidates).
RECENT_WINDOW = 10_000
QUERY_MAX_LENGTH = 200
# The ranked lists' cursors: (rank, id), salted per list.
CONVERSATION_RANKS = Keyset("conversations-search", "rank", descending=True, value_kind="number")
RUN_RANKS = Keyset("runs-search", "rank", descending=True, value_kind="number")
MESSAGE_RANKS = Keyset("message-matches", "rank", descending=True, value_kind="number")
STEP_RANKS = Keyset("step-matches", "rank", descending=True, value_kind="number")


def query_parse(params, name: str = "q") -> str | None:
    """The search text of `?q=`, or None when absent; empty, too long, NUL or wordless: 400."""
    raw = params.get(name)
    if raw is None:
        return None
    text = raw.strip()
    if not text:
        raise BadRequest(f"{name} must not be empty; leave it out to list without searching.")
    if len(text) > QUERY_MAX_LENGTH:
        raise BadRequest(f"{name} is too long (at most {QUERY_MAX_LENGTH} characters).")
    if "\x00" in text:
        raise BadRequest(f"{name} must not contain NUL characters.")
    groups = lexical.query_groups(text)
    if not any(not group.excluded for group in groups):
        raise BadRequest(f"{name} has no word to search for; got {raw[:100]!r}.")
    return text


@dataclass(frozen=True)
class Terms:
    """A parsed query: the PostgreSQL tsquery (text form) or FTS5 expression, and what the
    snippets mark (the words as written and the index terms they were stemmed to)."""

    expression: str
    words: str
    stems: tuple[str, ...]


_LEXEME = re.compile(r"'((?:[^']|'')*)'")


def _tsquery_alternatives(groups: list[lexical.QueryGroup], configs: list[str]) -> list[list[str]]:
    """Per group, its phrase query in each configuration (text form; "" for a stop word)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT x.g, c.c, phraseto_tsquery(c.c::regconfig, x.t)::text "
            "FROM unnest(%s::int[], %s::text[]) AS x(g, t), "
            "unnest(%s::text[]) WITH ORDINALITY AS c(c, n) ORDER BY x.g, c.n",
            [list(range(len(groups))), [group.text for group in groups], configs],
        )
        alternatives: list[list[str]] = [[] for _ in groups]
        for index, _config, text in cursor.fetchall():
            alternatives[index].append(text)
    return alternatives


def terms_of(query: str) -> Terms:
    groups = lexical.query_groups(query)
    stop = lexical.ENGLISH_STOP_WORDS | lexical.query_stop_words(query)
    words = " ".join(group.text for group in groups if not group.excluded)
    if connection.vendor != "postgresql":
        return Terms(_fts5(groups, stop), words, ())
    configs = lexical.query_configs(query)
    alternatives = _tsquery_alternatives(groups, configs)
    required: list[tuple[bool, str]] = []
    excluded: list[tuple[bool, str]] = []
    for group, queries in zip(groups, alternatives, strict=True):
        stemmed = queries[1:]  # queries[0] is "simple"
        stop_word = not group.is_phrase and (
            any(not text for text in stemmed) or group.text.casefold() in stop
        )
        options = " | ".join(dict.fromkeys(f"( {text} )" for text in queries if text))
        if not options:
            continue
        (excluded if group.excluded else required).append((stop_word, f"( {options} )"))
    kept = [text for stop_word, text in required if not stop_word] or [t for _, t in required]
    expression = " & ".join(kept + [f"!{text}" for _, text in excluded])
    return Terms(expression, words, tuple(dict.fromkeys(_LEXEME.findall(" ".join(kept)))))


def _fts5(groups: list[lexical.QueryGroup], stop: frozenset[str]) -> str:
    def quoted(text: str) -> str:
        return '"' + text.replace('"', '""') + '"'

    required = [group for group in groups if not group.excluded]
    content = [g for g in required if g.is_phrase or g.text.casefold() not in stop] or required
    expression = " AND ".join(quoted(group.text) for group in content)
    for group in groups:
        if group.excluded:
            expression += f" NOT {quoted(group.text)}"
    return expression


# --- candidates ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Subject:
    table: str
    fts: str
    columns: str  # the columns each candidate carries, after its rank


_MESSAGES = _Subject("activity_message", "activity_message_fts", "id, conversation_id")
_STEPS = _Subject("activity_runstep", "activity_step_fts", "id, run_id")


def _candidates(subject: _Subject, *, agent: Agent, terms: Terms) -> list[tuple]:
    """(rank, *columns) of the newest CANDIDATES matching rows of the Agent."""
    if not terms.expression:
        return []
    if connection.vendor != "postgresql":
        return _sqlite_candidates(subject, agent=agent, terms=terms)
    rank = f"ts_rank_cd(search_vector, %s::tsquery, 1), {subject.columns}, row"
    with connection.cursor() as cursor:
        # 1. The Agent's newest RECENT_WINDOW rows, read backwards on the primary key: a word
        # in one row in a hundred or more fills the candidates here, whatever the planner
        # thinks of it.
        cursor.execute(
            f"SELECT {rank} FROM (SELECT row, search_vector, {subject.columns} "  # noqa: S608
            f"FROM {subject.table} WHERE agent_id = %s ORDER BY row DESC LIMIT %s) recent "
            "WHERE search_vector @@ %s::tsquery ORDER BY row DESC LIMIT %s",
            [terms.expression, agent.pk, RECENT_WINDOW, terms.expression, CANDIDATES],
        )
        found = cursor.fetchall()
        if len(found) < CANDIDATES:
            # 2. Rarer: the older matches from the GIN index, forced (only bitmap scans): the
            # planner takes correlated words ("refund jacket") for rare and independent, and
            # its backward scan then read 600,000 rows for a thousand matches.
            older = found[-1][-1] if found else None
            with transaction.atomic(using=connection.alias), _bitmap_scans_only(cursor):
                cursor.execute(
                    f"SELECT {rank} FROM {subject.table} WHERE agent_id = %s "  # noqa: S608
                    "AND search_vector @@ %s::tsquery AND (%s::bigint IS NULL OR row < %s) "
                    "ORDER BY row DESC LIMIT %s",
                    [terms.expression, agent.pk, terms.expression, older, older,
                     CANDIDATES - len(found)],
                )  # fmt: skip
                found += cursor.fetchall()
    return [(float(rank), *rest[:-1]) for rank, *rest in found]


@contextmanager
def _bitmap_scans_only(cursor) -> Iterator[None]:
    """Plans of the statements inside may only use bitmap scans; the settings are put back
    after (a savepoint's release keeps SET LOCAL to the end of the request's transaction)."""
    cursor.execute("SET LOCAL enable_indexscan = off; SET LOCAL enable_seqscan = off")
    try:
        yield
    finally:
        cursor.execute("RESET enable_indexscan; RESET enable_seqscan")


def _sqlite_candidates(subject: _Subject, *, agent: Agent, terms: Terms) -> list[tuple]:
    columns = ", ".join(f"t.{name.strip()}" for name in subject.columns.split(","))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT -bm25({subject.fts}), {columns} FROM {subject.fts} f "  # noqa: S608
            f"JOIN {subject.table} t ON t.row = f.rowid "
            f"WHERE {subject.fts} MATCH %s AND t.agent_id = %s ORDER BY t.row DESC LIMIT %s",
            [terms.expression, agent.pk, CANDIDATES],
        )
        return [(float(rank), *rest) for rank, *rest in cursor.fetchall()]


def _ranked(items: list[tuple[float, str]]) -> list[tuple[float, str]]:
    return sorted(items, key=lambda item: (-item[0], _descending(item[1])))


def _descending(text: str) -> tuple[int, ...]:
    return tuple(-ord(character) for character in text) + (1,)


def _best_per(candidates: list[tuple], column: int) -> list[tuple[float, str]]:
    best: dict[str, float] = {}
    for row in candidates:
        key, rank = row[column], row[0]
        if rank > best.get(key, -1.0):
            best[key] = rank
    return _ranked([(rank, key) for key, rank in best.items()])


@dataclass
class RankedPage:
    items: list[tuple[float, str]]  # (rank, id), best first
    has_more: bool
    next_cursor: str | None


def _page_of(ranked: list[tuple[float, str]], *, keyset: Keyset, page: PageRequest) -> RankedPage:
    if page.after is not None:
        rank, last_id = cursor_decode(keyset, page.after)
        after = _descending(last_id)
        ranked = [
            item
            for item in ranked
            if item[0] < rank or (item[0] == rank and _descending(item[1]) > after)
        ]
    items = ranked[: page.limit]
    has_more = len(ranked) > page.limit
    cursor = cursor_encode(keyset, items[-1][0], items[-1][1]) if has_more and items else None
    return RankedPage(items, has_more, cursor)


def ranked_ids(
    *,
    agent: Agent,
    query: str,
    subject: str,
    page: PageRequest,
    allowed: Callable[[list[str]], set[str]] | None = None,
) -> RankedPage:
    """The page of conversation (`subject="conversations"`) or run ids matching `query`, best
    first; `allowed` keeps those the list's other filters let through."""
    terms = terms_of(query)
    if subject == "conversations":
        candidates, keyset = _candidates(_MESSAGES, agent=agent, terms=terms), CONVERSATION_RANKS
    else:
        candidates, keyset = _candidates(_STEPS, agent=agent, terms=terms), RUN_RANKS
    ranked = _best_per(candidates, 2)
    if allowed is not None and ranked:
        kept = allowed([item[1] for item in ranked])
        ranked = [item for item in ranked if item[1] in kept]
    return _page_of(ranked, keyset=keyset, page=page)


def matched_ids(*, agent: Agent, query: str, subject: str) -> list[str]:
    """Every conversation (run) among the newest CANDIDATES matches, best first (the console
    folds them into its list's filter)."""
    if subject == "conversations":
        candidates = _candidates(_MESSAGES, agent=agent, terms=terms_of(query))
    else:
        candidates = _candidates(_STEPS, agent=agent, terms=terms_of(query))
    return [row_id for _rank, row_id in _best_per(candidates, 2)]


# --- matches with their snippets ---------------------------------------------------------------


@dataclass
class Match:
    """A message (step) that matched: where it is, a highlighted snippet, its rank."""

    object: str  # "message_match" or "step_match"
    id: str
    parent_id: str  # the conversation (run)
    rank: float
    snippet: str  # HTML: the text escaped, matched words in <mark>
    role: str = ""  # messages
    name: str = ""  # steps
    kind: str = ""  # steps
    created_at: datetime | None = None  # a message's time, a step's start
    title: str = ""  # what the console names its conversation (run) by


def _snippet(text: str, terms: Terms) -> str:
    return lexical.marked_html(lexical.highlight(text, terms.words, stems=terms.stems))


def message_matches(*, agent: Agent, query: str, page: PageRequest) -> tuple[list[Match], Any]:
    """The page of messages matching `query`, best first, with their snippets."""
    terms = terms_of(query)
    candidates = _candidates(_MESSAGES, agent=agent, terms=terms)
    parent = {row[1]: row[2] for row in candidates}
    ranked = _page_of(
        _ranked([(row[0], row[1]) for row in candidates]), keyset=MESSAGE_RANKS, page=page
    )
    ids = [item[1] for item in ranked.items]
    rows = {
        message.id: message
        for message in Message.objects.filter(agent=agent, id__in=ids).only(
            "id", "role", "parts", "created_at", "conversation_id"
        )
    }
    matches = [
        Match(
            "message_match", message_id, parent[message_id], rank,
            _snippet(message_text(rows[message_id].parts), terms),
            role=rows[message_id].role, created_at=rows[message_id].created_at,
        )
        for rank, message_id in ranked.items
        if message_id in rows
    ]  # fmt: skip
    return matches, ranked


def step_matches(*, agent: Agent, query: str, page: PageRequest) -> tuple[list[Match], Any]:
    """The page of steps whose input, output, error or query match, best first."""
    terms = terms_of(query)
    candidates = _candidates(_STEPS, agent=agent, terms=terms)
    parent = {row[1]: row[2] for row in candidates}
    ranked = _page_of(
        _ranked([(row[0], row[1]) for row in candidates]), keyset=STEP_RANKS, page=page
    )
    ids = [item[1] for item in ranked.items]
    fields = ("id", "name", "kind", "started_at", "input", "output", "error", "query")
    rows = {step.id: step for step in RunStep.objects.filter(agent=agent, id__in=ids).only(*fields)}
    matches = []
    for rank, step_id in ranked.items:
        step = rows.get(step_id)
        if step is None:
            continue
        text = step_text(
            {name: getattr(step, name) for name in ("input", "output", "error", "query")}
        )
        matches.append(
            Match(
                "step_match", step_id, parent[step_id], rank, _snippet(text, terms),
                name=step.name, kind=step.kind, created_at=step.started_at,
            )
        )  # fmt: skip
    return matches, ranked
