"""Writes of scores and score configs: every rule about them lives here, once.

Scores come from three sources through the same checks:
- the API (`POST /v1/scores`, one or a batch of up to 1,000) and `/v1/ingest`'s `score`
  records: `scores_parse` (parsing) then `scores_create` (writing, which resolves targets in
  targets and stores rows in storing);
- end users' browser tokens (thumbs up or down on an assistant message of their own
  conversation): `feedback_give`, `feedback_withdraw` (feedback);
- owners and members in the console: `scores_create` with `source=console`, `score_delete` and
  `scores_delete` (feedback, since deleting feedback changes what a run's feedback says).

Score configs: configs.
"""

from apps.scores.services.configs import (
    score_config_archive,
    score_config_create,
    score_config_get,
    score_config_update,
)
from apps.scores.services.feedback import (
    feedback_give,
    feedback_withdraw,
    runs_feedback_announce,
    score_delete,
    scores_delete,
)
from apps.scores.services.parsing import (
    MAX_BATCH,
    ItemError,
    ScoreBatch,
    ScoreIn,
    score_input_parse,
    scores_parse,
)
from apps.scores.services.writing import (
    ScoresResult,
    scores_create,
    scores_ingest,
    scores_ingest_parse,
)

__all__ = [
    "MAX_BATCH",
    "ItemError",
    "ScoreBatch",
    "ScoreIn",
    "ScoresResult",
    "feedback_give",
    "feedback_withdraw",
    "runs_feedback_announce",
    "score_config_archive",
    "score_config_create",
    "score_config_get",
    "score_config_update",
    "score_delete",
    "score_input_parse",
    "scores_create",
    "scores_delete",
    "scores_ingest",
    "scores_ingest_parse",
    "scores_parse",
]
