"""The console's word search: the matches shown above the Conversations and Runs tables, and
the ids they fold into those tables' filters (apps.activity.word_search)."""

from dataclasses import dataclass, field

from apps.activity import word_search
from apps.activity.models import Conversation, Run
from apps.common.errors import BadRequest
from apps.common.keyset import PageRequest
from apps.workspaces.console import ConsoleRequest

# Matches shown above a table; the table itself lists every matched conversation (run).
SHOWN_MATCHES = 10


@dataclass
class WordMatches:
    query: str = ""
    matches: list = field(default_factory=list)  # word_search.Match, best first, with a title
    ids: list[str] = field(default_factory=list)  # every matched conversation (run)
    error: str | None = None

    def keep_within(self, queryset) -> None:
        """Keep the shown matches whose conversation (run) the page's other filters keep."""
        if self.matches:
            parents = {match.parent_id for match in self.matches}
            kept = set(queryset.filter(id__in=parents).values_list("id", flat=True))
            self.matches = [match for match in self.matches if match.parent_id in kept]


def word_matches(request: ConsoleRequest, query: str, *, subject: str) -> WordMatches:
    """The best matches of `query` for the page (`subject`: "conversations" or "runs") and
    every matched id; a query with no word to search gives none and says why."""
    if not query:
        return WordMatches()
    try:
        text = word_search.query_parse({"q": query})
    except BadRequest as exc:
        return WordMatches(query=query, error=str(exc))
    assert text is not None
    agent = request.agent
    page = PageRequest(limit=SHOWN_MATCHES, after=None)
    if subject == "conversations":
        matches, _ranked = word_search.message_matches(agent=agent, query=text, page=page)
        parents = Conversation.objects.filter(agent=agent, id__in={m.parent_id for m in matches})
        titles = {row.id: row.title or "Untitled conversation" for row in parents}
    else:
        matches, _ranked = word_search.step_matches(agent=agent, query=text, page=page)
        runs = Run.objects.filter(agent=agent, id__in={m.parent_id for m in matches})
        titles = {row.id: row.model_id or row.id for row in runs}
    ids = word_search.matched_ids(agent=agent, query=text, subject=subject)
    for match in matches:
        match.title = titles.get(match.parent_id, match.parent_id)
    return WordMatches(query=text, matches=matches, ids=ids)
