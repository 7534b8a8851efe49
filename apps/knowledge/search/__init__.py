"""Hybrid search over an Agent's chunks: keywords and meaning, fused by reciprocal rank.

`search_chunks` (query.py) reads the query, asks each half for candidates — the keyword half
(keyword.py: BM25 over PostgreSQL's text search or SQLite's FTS5) and the semantic half
(semantic.py: the passages nearest the query's embedding) —, fuses their lists by reciprocal
rank (score = sum of 1 / (RRF_K + rank); `mode` may ask for one half alone), scores the chosen
passages on the calibrated [0, 1] scale (scoring.py, apps.knowledge.relevance) and returns them
as hits with a highlighted snippet (hits.py, snippets.py). state.py says what the Agent has;
fts.py keeps SQLite's full-text table. The number of queries does not depend on the data.
"""

from apps.knowledge.search.hits import SearchHit
from apps.knowledge.search.query import MODES, search_chunks

__all__ = ["MODES", "SearchHit", "search_chunks"]
