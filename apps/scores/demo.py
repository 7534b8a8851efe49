"""The demo's scores: two configs, end users' thumbs on about a third of the answers (one in
five of them down, with a comment now and then), and an automatic `grounded` check and a
`correctness` grade on some runs, so the Scores page, the lists' filters and the Overview's
charts have something to show. Idempotent: an Agent with scores is left as it is."""

import random

from django.utils import timezone

from apps.activity.models import Conversation, Message, Run
from apps.common.ids import new_id
from apps.scores.models import FEEDBACK_NAME, DataType, Score, ScoreConfig, Source, TargetType
from apps.workspaces.models import Agent

COMMENTS = (
    "Not what I asked",
    "The refund window is wrong",
    "Too long",
    "It missed my order number",
)


def scores_seed_demo(*, agent: Agent) -> int:
    """Seed `agent`'s scores unless it has some; the number of scores made."""
    if Score.objects.filter(agent=agent).exists():
        return 0
    rng = random.Random(f"demo-scores-{agent.pk}")
    now = timezone.now()
    for name, data_type, extra in (
        ("correctness", DataType.NUMERIC, {"min_value": 0.0, "max_value": 1.0}),
        ("grounded", DataType.BOOLEAN, {}),
    ):
        ScoreConfig.objects.get_or_create(
            agent=agent,
            name=name,
            defaults={"data_type": data_type, "created_at": now, "updated_at": now, **extra},
        )
    users = dict(Conversation.objects.filter(agent=agent).values_list("id", "user_id"))
    scores = []
    answers = Message.objects.filter(agent=agent, role=Message.Role.ASSISTANT).values_list(
        "id", "conversation_id", "run_id", "created_at"
    )
    for message_id, conversation_id, run_id, at in answers.iterator():
        user_id = users.get(conversation_id)
        if user_id is None or rng.random() > 0.35:
            continue
        up = rng.random() > 0.2
        scores.append(
            Score(
                id=new_id("score"),
                agent=agent,
                target_type=TargetType.MESSAGE,
                message_id=message_id,
                conversation_id=conversation_id,
                run_id=run_id,
                name=FEEDBACK_NAME,
                data_type=DataType.BOOLEAN,
                boolean_value=up,
                comment=None if up or rng.random() < 0.5 else rng.choice(COMMENTS),
                source=Source.END_USER,
                end_user_id=user_id,
                created_at=at,
                updated_at=at,
            )  # fmt: skip
        )
    runs = Run.objects.filter(agent=agent).values_list("id", "conversation_id", "created_at")
    for run_id, conversation_id, at in runs.iterator():
        if rng.random() < 0.5:
            scores.append(
                Score(
                    id=new_id("score"),
                    agent=agent,
                    target_type=TargetType.RUN,
                    run_id=run_id,
                    conversation_id=conversation_id,
                    name="grounded",
                    data_type=DataType.BOOLEAN,
                    boolean_value=rng.random() > 0.1,
                    source=Source.API,
                    created_at=at,
                    updated_at=at,
                )  # fmt: skip
            )
        if rng.random() < 0.15:
            scores.append(
                Score(
                    id=new_id("score"),
                    agent=agent,
                    target_type=TargetType.RUN,
                    run_id=run_id,
                    conversation_id=conversation_id,
                    name="correctness",
                    data_type=DataType.NUMERIC,
                    number_value=round(rng.betavariate(5, 2), 2),
                    source=Source.API,
                    created_at=at,
                    updated_at=at,
                )  # fmt: skip
            )
    Score.objects.bulk_create(scores, batch_size=1000)
    return len(scores)
