"""Factories for scores: keyword arguments, sensible defaults, saved rows."""

from django.utils import timezone

from apps.scores.models import DataType, Score, ScoreConfig, Source, TargetType


def score_factory(*, agent, run=None, message=None, conversation=None, **fields) -> Score:
    now = timezone.now()
    defaults = {
        "name": "correctness",
        "data_type": DataType.NUMERIC,
        "number_value": 0.5,
        "source": Source.API,
        "created_at": now,
        "updated_at": now,
    }
    if run is not None:
        defaults.update(
            target_type=TargetType.RUN, run_id=run.id, conversation_id=run.conversation_id
        )
    elif message is not None:
        defaults.update(
            target_type=TargetType.MESSAGE,
            message_id=message.id,
            conversation_id=message.conversation_id,
            run_id=message.run_id,
        )
    else:
        defaults.update(target_type=TargetType.CONVERSATION, conversation_id=conversation.id)
    defaults.update(fields)
    return Score.objects.create(agent=agent, **defaults)


def score_config_factory(*, agent, name="helpfulness", data_type=DataType.NUMERIC, **fields):
    now = timezone.now()
    defaults = {"created_at": now, "updated_at": now}
    if data_type == DataType.NUMERIC:
        defaults.update(min_value=0.0, max_value=1.0)
    if data_type == DataType.CATEGORICAL:
        defaults["categories"] = ["correct", "partially", "wrong"]
    defaults.update(fields)
    return ScoreConfig.objects.create(agent=agent, name=name, data_type=data_type, **defaults)
