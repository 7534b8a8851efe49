"""A few help-centre articles for the demo Agent, ingested by the worker like any upload."""

from django.core.files.uploadedfile import SimpleUploadedFile

from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.services import document_create_from_upload
from apps.workspaces.models import Agent

ARTICLES = {
    "refund-policy.md": """# Refund policy

## When you can ask for a refund
Orders can be refunded within **30 days** of delivery. Digital plans are refunded pro rata
when cancelled in the first 14 days.

## How long it takes
Refunds go back to the original payment method. Banks usually take 3-5 business days to show
the money on your statement.

| Method | Time |
|---|---|
| Card | 3-5 business days |
| PayPal | 1 business day |
| Bank transfer | up to 7 business days |
""",
    "shipping.md": """# Shipping

## Countries
We ship to the EU, the UK, Norway and Switzerland with DHL Express and national post.

## Delivery times
- Express: 2 business days
- Standard: 5-7 business days

Customs duties for Norway and Switzerland are paid by the recipient.
""",
    "api-limits.md": """# API rate limits

Every API key has its own limit: 600 requests per minute on the Pro plan and 60 on the Free
plan. Requests above the limit are answered with `429 rate_limited` and a `Retry-After`
header giving the seconds to wait.

## Good practice
Retry after the time the header gives, not sooner, and spread bulk imports over time.
""",
}


def knowledge_seed_demo(*, agent: Agent) -> str | None:
    """Add the articles once; the worker extracts and indexes them when it runs."""
    if KnowledgeDocument.objects.filter(agent=agent).exists():
        return None
    for file_name, text in ARTICLES.items():
        upload = SimpleUploadedFile(file_name, text.encode(), content_type="text/markdown")
        title = text.splitlines()[0].removeprefix("# ")
        document_create_from_upload(agent=agent, upload=upload, name=title)
    return f"{len(ARTICLES)} help articles queued for extraction"
