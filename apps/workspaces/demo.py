"""The demo owner, workspace, Agent and key for `manage.py seed_demo` (composed in apps.demo
with the other apps' demo data)."""

from django.contrib.auth import get_user_model
from django.db import transaction

from apps.workspaces.models import Agent, Membership, Workspace
from apps.workspaces.services import (
    actor_for_user,
    agent_create,
    agent_update,
    api_key_create,
    workspace_create,
)


def demo_seed(*, email: str, password: str) -> dict:
    """Idempotently create the demo owner, workspace, Agent and a fresh full-scope key."""
    from apps.api.scopes import ALL_SCOPES

    user_model = get_user_model()
    with transaction.atomic():
        user, created = user_model.objects.get_or_create(
            username=email, defaults={"email": email, "first_name": "Demo", "last_name": "Owner"}
        )
        if created or not user.check_password(password):
            user.set_password(password)
            user.save(update_fields=["password"])
        membership = (
            Membership.objects.select_related("workspace")
            .filter(user=user, role=Membership.Role.OWNER, workspace__name="Demo workspace")
            .first()
        )
        workspace = (
            membership.workspace
            if membership
            else workspace_create(name="Demo workspace", owner=user)
        )
        agent = workspace.agents.filter(name="Support Agent").first() or _demo_agent(
            workspace=workspace, owner=user
        )
        key, raw = api_key_create(
            agent=agent, name="Demo full-scope key", scopes=list(ALL_SCOPES), created_by=user
        )
    return {"workspace": workspace, "agent": agent, "user": user, "key": key, "raw_key": raw}


DEMO_INSTRUCTIONS_V1 = """You are the support assistant of Acme Outdoor, an online shop for hiking gear.
Answer questions about orders, shipping, returns and products.
Be friendly and brief."""

DEMO_INSTRUCTIONS = """You are the support assistant of Acme Outdoor, an online shop for hiking gear.
Answer questions about orders, shipping, returns and products.
Be friendly and brief: three short paragraphs at most.

Rules:
- Search the knowledge base before answering policy questions, and cite the article.
- Never promise a refund amount; say what the refund policy says and offer a ticket.
- Look orders up with lookup_order; ask for the order number if you do not have it.
- If the customer is upset or asks for a person, create a ticket and say when they will hear back.

Answer in the customer's language."""


def _demo_agent(*, workspace: Workspace, owner) -> Agent:
    """The demo Agent with a realistic configuration and a short history to look at."""
    agent = agent_create(
        workspace=workspace,
        name="Support Agent",
        description="Answers customer questions on the shop's website.",
        instructions=DEMO_INSTRUCTIONS_V1,
        model_id="gpt-4.1-mini",
        allowed_origins=["https://shop.example.com"],
        actor=actor_for_user(owner),
    )
    agent_update(
        workspace_id=workspace.pk,
        agent_id=agent.pk,
        changes={"instructions": DEMO_INSTRUCTIONS, "model_id": "o4-mini", "effort": "medium"},
        actor=actor_for_user(owner),
    )
    return agent_update(
        workspace_id=workspace.pk,
        agent_id=agent.pk,
        changes={"allowed_origins": ["https://shop.example.com", "https://help.example.com"]},
        actor=actor_for_user(owner),
    )
