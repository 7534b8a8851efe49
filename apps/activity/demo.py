"""Realistic demo activity for `manage.py seed_demo`: a few hundred users, multi-turn
conversations whose parts use every AI SDK part type, and runs across models over 30 days.

Deterministic (a seeded random generator), bulk inserted (a few seconds), and idempotent: an
Agent that already has activity is left alone.
"""

import random
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.activity import analytics
from apps.activity.models import Conversation, EndUser, Message, Run
from apps.activity.search_index import message_search_fields
from apps.common.ids import new_id
from apps.workspaces.models import Agent

USERS = 300
CONVERSATIONS = 700
DAYS = 30

FIRST_NAMES = (
    "Ada", "Grace", "Alan", "Linus", "Margaret", "Ken", "Barbara", "Dennis", "Radia", "Tim",
    "Katherine", "Guido", "Frances", "John", "Hedy", "Edsger", "Sophie", "Yukihiro", "Anita", "Bjarne",
)  # fmt: skip
LAST_NAMES = (
    "Lovelace", "Hopper", "Turing", "Torvalds", "Hamilton", "Thompson", "Liskov", "Ritchie",
    "Perlman", "Berners-Lee", "Johnson", "van Rossum", "Allen", "McCarthy", "Lamarr", "Dijkstra",
)  # fmt: skip
# (model, effort choices, relative speed, credits per 1k tokens)
MODELS = (
    ("gpt-4.1-mini", (None,), 1.0, 0.12),
    ("gpt-4.1", (None,), 1.8, 0.6),
    ("o4-mini", ("low", "medium", "high"), 3.2, 0.35),
    ("claude-sonnet-4", (None, "medium"), 2.0, 0.9),
    ("gemini-2.5-flash", (None,), 0.8, 0.08),
)
ERRORS = ("provider_timeout", "rate_limited", "tool_error", "context_length_exceeded")
# Each topic: conversation title, the user's first question, the assistant's answer and the
# tools an Agent would call for it, so a demo transcript reads like a real exchange.
TOPICS = (
    (
        "Refund for order #{n}",
        "Where is my refund for order #{n}? It has been a week.",
        "Your refund for order **#{n}** was issued on Monday. Banks usually take *3-5 business "
        "days*.\n\n- Amount: €{n}.00\n- Method: original card",
        ("lookup_order", "search_knowledge"),
    ),
    (
        "Shipping to Norway",
        "Do you ship to Norway, and how long does it take?",
        "Yes! We ship to Norway with DHL Express:\n\n| Option | Time |\n|---|---|\n| Express | "
        "2 days |\n| Standard | 5-7 days |",
        ("search_knowledge",),
    ),
    (
        "Reset my password",
        "I can't log in; the reset email never arrives.",
        "I've sent a new reset link. If it doesn't arrive in 5 minutes, check the spam folder or "
        "[contact support](https://support.example.com/login-help).",
        ("create_ticket", "search_knowledge"),
    ),
    (
        "Pricing for teams of {n}",
        "What would a team plan cost for {n} people?",
        "A team plan for {n} seats is **€{n}9/month**, billed yearly. Want me to open a quote?",
        ("search_knowledge", "create_ticket"),
    ),
    (
        "API rate limits",
        "What are the API rate limits on the Pro plan?",
        "The Pro plan allows `600 requests/minute` per key; bursts above return `429` with "
        "`Retry-After`.",
        ("search_knowledge", "web_search"),
    ),
    (
        "Invoice address change",
        "Can I change the address on invoice INV-{n}?",
        "Done: invoice **INV-{n}** now shows your new address. A corrected PDF is on its way.",
        ("lookup_order", "create_ticket"),
    ),
    (
        "Weather in Lisbon",
        "Is it going to rain in Lisbon tomorrow?",
        "Tomorrow in Lisbon: light rain in the morning, 19 °C in the afternoon. Take an umbrella.",
        ("get_weather", "web_search"),
    ),
    (
        "Cancel subscription",
        "How do I cancel my subscription before renewal?",
        "Go to **Settings → Billing → Cancel plan**. You keep access until the end of the period.",
        ("search_knowledge",),
    ),
    (
        "Integrate with Slack",
        "Can the assistant post answers into our Slack channel?",
        "Yes: install the Slack app from **Integrations**, then pick the channel. "
        "[Setup guide](https://help.example.com/slack)",
        ("search_knowledge", "web_search"),
    ),
    (
        "Data export (GDPR)",
        "Please export all the data you hold about me.",
        "I've opened request **#{n}** with our privacy team; you'll get the export within 30 days.",
        ("create_ticket",),
    ),
)


def _user_parts(rng: random.Random, text: str) -> list[dict]:
    parts = [{"type": "text", "text": text}]
    if rng.random() < 0.08:
        parts.append(
            {
                "type": "file",
                "mediaType": "image/png",
                "filename": "screenshot.png",
                "url": "https://files.example.com/uploads/screenshot.png",
            }
        )
    return parts


def _assistant_parts(
    rng: random.Random, n: int, answer: str, tools: list[str], failed: list[str]
) -> list:
    parts: list[dict] = [{"type": "step-start"}]
    if rng.random() < 0.5:
        parts.append(
            {
                "type": "reasoning",
                "text": "Answer from what the tools return rather than from memory; "
                "keep the reply short and link the help article if there is one.",
            }
        )
    for index, tool in enumerate(tools):
        call = {
            "type": f"tool-{tool}",
            "toolCallId": f"call_{n}_{index}",
            "input": {"query": f"order {n}"} if tool != "get_weather" else {"city": "Lisbon"},
        }
        if tool in failed:
            call |= {"state": "output-error", "errorText": "Upstream returned 503 after 10 s"}
        else:
            call |= {
                "state": "output-available",
                "output": {"status": "ok", "results": [{"id": n, "score": 0.92}]},
            }
        parts.append(call)
        parts.append({"type": "step-start"})
    parts.append({"type": "text", "text": answer.format(n=n)})
    if "search_knowledge" in tools or rng.random() < 0.1:
        parts.append(
            {
                "type": "source-url",
                "sourceId": f"src_{n}",
                "url": "https://help.example.com/articles/refund-policy",
                "title": "Refund policy",
            }
        )
    if rng.random() < 0.05:
        parts.append({"type": "data-weather", "data": {"city": "Lisbon", "celsius": 19}})
    return parts


def _users(rng: random.Random, *, agent: Agent, start: datetime) -> list[EndUser]:
    users = []
    for i in range(USERS):
        first_seen = start + timedelta(seconds=rng.uniform(0, DAYS * 86400 * 0.8))
        anonymous = rng.random() < 0.3
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        users.append(
            EndUser(
                id=new_id("usr"),
                agent=agent,
                external_id=None if anonymous else f"cust_{10000 + i}",
                identity_type="anonymous"
                if anonymous
                else rng.choice(("user", "user", "user", "preview")),
                display_name=None if anonymous else name,
                email=None if anonymous else f"{name.split()[0].lower()}.{i}@example.com",
                avatar_url=None
                if anonymous or rng.random() < 0.5
                else f"https://avatars.example.com/u/{i}.png",
                first_seen_at=first_seen,
                last_seen_at=first_seen,
            )
        )
    return users


# A conversation's topic: its order number, the user's question, the answer, the tools it calls.
Topic = tuple[int, str, str, tuple[str, ...]]


def _conversation(
    rng: random.Random, *, agent: Agent, user: EndUser, now: datetime
) -> tuple[Conversation, Topic]:
    began = user.first_seen_at + timedelta(
        seconds=rng.uniform(0, (now - user.first_seen_at).total_seconds())
    )
    n = rng.randint(100, 9999)
    title, question, answer, topic_tools = rng.choice(TOPICS)
    conversation = Conversation(
        id=new_id("conv"),
        agent=agent,
        user=user,
        title=title.format(n=n) if rng.random() > 0.05 else None,
        source="embed" if rng.random() < 0.85 else "preview",
        created_at=began,
        updated_at=began,
    )
    return conversation, (n, question, answer, topic_tools)


def _turn(
    rng: random.Random,
    conversation: Conversation,
    topic: Topic,
    *,
    moment: datetime,
    first: bool,
    streaming: bool,
) -> tuple[list[Message], Run, datetime]:
    """One exchange: the user's message, the run answering it and (unless it failed, mostly)
    the assistant's message; with when the user speaks next."""
    agent = conversation.agent
    n, question, answer, topic_tools = topic
    text = (
        question.format(n=n)
        if first
        else rng.choice(
            (
                "Thanks! And how long will that take?",
                "Can you check again?",
                "Great, thank you.",
            )
        )
    )
    messages = [
        Message(
            id=new_id("msg"), agent=agent, conversation=conversation, role="user",
            parts=_user_parts(rng, text), created_at=moment,
        )
    ]  # fmt: skip
    run, done = _run(rng, conversation, topic_tools, moment=moment, streaming=streaming)
    ended = run.status != "streaming"
    if run.status != "failed" or rng.random() < 0.5:
        messages.append(
            Message(
                id=new_id("msg"), agent=agent, conversation=conversation, role="assistant",
                parts=_assistant_parts(rng, n, answer, run.tool_names, run.failed_tool_names),
                created_at=done, updated_at=done if ended else None,
            )
        )  # fmt: skip
    return messages, run, done + timedelta(seconds=rng.uniform(20, 600))


def _run(
    rng: random.Random,
    conversation: Conversation,
    topic_tools: tuple[str, ...],
    *,
    moment: datetime,
    streaming: bool,
) -> tuple[Run, datetime]:
    """A run of a model answering at `moment`, with when it ended."""
    model, efforts, speed, price = rng.choice(MODELS)
    tools = rng.sample(topic_tools, k=min(len(topic_tools), rng.choice((0, 1, 1, 2))))
    failed = [tool for tool in tools if rng.random() < 0.12]
    roll = rng.random()
    run_status = (
        "failed"
        if roll < 0.06 or (failed and roll < 0.3)
        else ("aborted" if roll < 0.09 else "completed")
    )
    if streaming:
        run_status = "streaming"
    input_tokens = int(rng.lognormvariate(7.3, 0.6))
    output_tokens = int(rng.lognormvariate(5.4, 0.7))
    cache_read = int(input_tokens * rng.choice((0, 0, 0.3, 0.6)))
    first_chunk = moment + timedelta(milliseconds=rng.lognormvariate(6.4, 0.4) * speed)
    latency = (first_chunk - moment).total_seconds() * 1000 + output_tokens * 12 * speed
    latency += 900 * len(tools) * rng.uniform(0.6, 1.8)
    done = moment + timedelta(milliseconds=latency)
    ended = run_status != "streaming"
    run = Run(
        id=new_id("run"),
        agent=conversation.agent,
        conversation=conversation,
        user=conversation.user,
        request_id=f"req_{rng.getrandbits(48):012x}",
        status=run_status,
        model_id=model,
        effort=rng.choice(efforts),
        sdk_version=rng.choice(("5.0.12", "5.0.12", "5.1.3", "4.3.19")),
        protocol_version=rng.choice((1, 2, 2)),
        input_tokens=input_tokens if ended else None,
        output_tokens=output_tokens if ended else None,
        total_tokens=input_tokens + output_tokens if ended else None,
        cache_read_tokens=cache_read if ended else None,
        cache_write_tokens=int(input_tokens * 0.1) if ended and cache_read else 0,
        credits_charged=round((input_tokens + output_tokens) / 1000 * price, 4) if ended else None,
        tool_names=tools,
        failed_tool_names=failed,
        component_kinds=["card"] if rng.random() < 0.15 else [],
        error_code=rng.choice(ERRORS) if run_status == "failed" else None,
        first_chunk_at=first_chunk,
        completed_at=done if ended else None,
        total_turn_latency_ms=round(latency, 1) if ended else None,
        created_at=moment,
        updated_at=done if ended else moment,
    )
    return run, done


def activity_seed_demo(*, agent: Agent) -> str:
    """Fill `agent` with a month of realistic activity, unless it already has some."""
    if EndUser.objects.filter(agent=agent).exists() or Run.objects.filter(agent=agent).exists():
        return "already present (left unchanged)"
    rng = random.Random(f"demo-{agent.pk}")
    now = timezone.now()
    start = now - timedelta(days=DAYS)
    users = _users(rng, agent=agent, start=start)

    conversations: list[Conversation] = []
    messages: list[Message] = []
    runs: list[Run] = []
    for c in range(CONVERSATIONS):
        user = rng.choice(users)
        conversation, topic = _conversation(rng, agent=agent, user=user, now=now)
        moment = conversation.created_at
        turns = rng.choice((1, 1, 2, 2, 3, 4))
        status = "completed"
        for turn in range(turns):
            turn_messages, run, moment = _turn(
                rng,
                conversation,
                topic,
                moment=moment,
                first=turn == 0,
                streaming=c < 3 and turn == turns - 1,
            )
            messages += turn_messages
            runs.append(run)
            status = run.status
        conversation.status = status
        conversation.updated_at = min(moment, now)
        user.last_seen_at = max(user.last_seen_at, conversation.updated_at)
        conversations.append(conversation)

    for message in messages:
        for name, value in message_search_fields(message.parts).items():
            setattr(message, name, value)
    with transaction.atomic():
        EndUser.objects.bulk_create(users, batch_size=500)
        Conversation.objects.bulk_create(conversations, batch_size=500)
        Message.objects.bulk_create(messages, batch_size=500)
        Run.objects.bulk_create(runs, batch_size=500)
        # Bulk-inserted, not recorded: the analytics and Overview rollup counts them now.
        analytics.rollup_rebuild(agent_id=agent.pk)
    return (
        f"{len(users)} users, {len(conversations)} conversations, {len(messages)} messages, "
        f"{len(runs)} runs over the last {DAYS} days"
    )
