"""Unanswered questions: the retrieval steps whose search found nothing good enough, grouped by
meaning, and how often each document is retrieved (docs/knowledge.md, "Unanswered questions").

- `models`: the groups, their distinct questions, each unanswered step, each (run, document)
  retrieval, and the sweep's position.
- `clustering`: assigning a question vector to the nearest group centroid (pure numpy).
- `vectors`: a question's vector (its embedding, and its stems when not in English).
- `services`: the sweep (beat task `knowledge.gaps_sweep`) and the console's and API's writes.
- `selectors`: the reads of the Unanswered questions page, `GET /v1/knowledge/gaps` and the
  document pages.
- `feedback`: the one place end users' negative feedback comes in (see its docstring).
"""
