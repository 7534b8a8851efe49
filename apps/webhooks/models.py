# ruff: noqa: DJ001 - the API tells null ("none yet") from "" apart, so some strings are nullable.
"""Webhook configuration of an Agent, its deliveries (a transactional outbox) and their attempts.

A delivery is created in the same transaction as the run that reached an end state, with its
body frozen, so every attempt sends the same bytes. Dispatchers claim due deliveries with
`SELECT ... FOR UPDATE SKIP LOCKED`, mark them `sending` with a lease and a claim token, post
without holding a lock, then record the attempt with a write guarded by that token.
"""

from django.db import models

from apps.common.ids import id_factory

# `usage.threshold_reached` is a workspace's credits crossing 80 % or 100 % of its monthly
# limit (apps.usage); its deliveries carry no run (`run_id` null).
USAGE_THRESHOLD_EVENT = "usage.threshold_reached"
RUN_EVENT_TYPES = ("run.completed", "run.failed", "run.aborted")
# `score.created` is a new score (apps.scores): an API or ingest score, an end user's first
# feedback on a message, a score added in the console; its deliveries carry its run, if any.
SCORE_CREATED_EVENT = "score.created"
EVENT_TYPES = (*RUN_EVENT_TYPES, USAGE_THRESHOLD_EVENT, SCORE_CREATED_EVENT)


class Webhook(models.Model):
    """One per Agent; created on first configuration (until then the API shows defaults)."""

    id = models.CharField(primary_key=True, max_length=40, default=id_factory("whk"))
    agent = models.OneToOneField(
        "workspaces.Agent", on_delete=models.CASCADE, related_name="webhook"
    )
    enabled = models.BooleanField(default=False)
    events = models.JSONField(default=list)
    url = models.CharField(max_length=2048, null=True, blank=True)
    # Standard Webhooks secret "whsec_<base64>"; kept in clear because every attempt signs with it.
    secret = models.CharField(max_length=128)
    # After a rotation the previous secret also signs for a grace period, so receivers can roll.
    previous_secret = models.CharField(max_length=128, null=True, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    # Deliveries that failed for good in a row; reaching the limit pauses the webhook.
    consecutive_failures = models.PositiveIntegerField(default=0)
    # Delivery health, moved by every recorded attempt in the transaction that records it (the
    # webhook row is locked there anyway), so the console and the API read it from one row
    # instead of scanning attempts: when the endpoint last answered 2xx, since when every
    # attempt has failed (null while the latest attempt succeeded), and the latest failure.
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, null=True, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Webhook of {self.agent_id}"

    @property
    def is_active(self) -> bool:
        return bool(self.enabled and self.url and self.events and self.paused_at is None)


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # waiting for its first attempt or next retry
    SENDING = "sending", "Sending"  # claimed by a dispatcher, attempt in flight
    SUCCEEDED = "succeeded", "Succeeded"  # the endpoint answered 2xx
    FAILED = "failed", "Failed"  # gave up: schedule exhausted (or a test/manual send failed)
    PAUSED = "paused", "Paused"  # waits: the webhook is paused or disabled


class AttemptStatus(models.TextChoices):
    SUCCEEDED = "succeeded", "Succeeded"  # 2xx
    FAILED = "failed", "Failed"  # any other HTTP status
    TIMEOUT = "timeout", "Timed out"  # connect or read timeout
    ERROR = "error", "Error"  # connection refused, TLS, refused by the network guard, interrupted


class ClaimKind(models.TextChoices):
    AUTO = "auto", "Automatic"  # the schedule: first send or an automatic retry
    MANUAL = "manual", "Manual"  # an owner's retry (or a test send): does not move the schedule


class WebhookDelivery(models.Model):
    Status = DeliveryStatus

    id = models.CharField(primary_key=True, max_length=40, default=id_factory("dlv"))
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    agent = models.ForeignKey("workspaces.Agent", on_delete=models.CASCADE, related_name="+")
    # The run's id, not a foreign key: a test delivery may carry a sample run. Null for events
    # that are not about one run (usage.threshold_reached).
    run_id = models.CharField(max_length=64, null=True, blank=True)
    event_type = models.CharField(max_length=40)
    is_test = models.BooleanField(default=False)
    # The exact JSON sent to the endpoint, frozen at creation so every attempt sends these bytes.
    body = models.TextField()
    status = models.CharField(max_length=12, choices=DeliveryStatus.choices)
    attempts = models.PositiveIntegerField(default=0)
    # Automatic retries used of the schedule (manual retries do not count).
    retry_count = models.PositiveIntegerField(default=0)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    error_message = models.CharField(max_length=500, null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # The claim of the attempt in flight: who holds it, until when, and what to return to.
    claim_token = models.CharField(max_length=40, null=True, blank=True)
    claim_kind = models.CharField(max_length=10, choices=ClaimKind.choices, null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sending_until = models.DateTimeField(null=True, blank=True)
    prior_status = models.CharField(
        max_length=12, choices=DeliveryStatus.choices, null=True, blank=True
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        indexes = [
            # GET .../webhook/deliveries and the deliveries table: newest first.
            models.Index(fields=["agent", "-created_at", "-id"], name="dlv_agent_created"),
            # ?status= and ?event_type= filters of the list.
            models.Index(fields=["agent", "status", "-created_at", "-id"], name="dlv_agent_status"),
            models.Index(
                fields=["agent", "event_type", "-created_at", "-id"], name="dlv_agent_event"
            ),
            # The deliveries table sorted by status or attempts (selectors.DELIVERY_SORTS).
            models.Index(fields=["agent", "status", "id"], name="dlv_agent_status_order"),
            models.Index(fields=["agent", "-attempts", "-id"], name="dlv_agent_attempts"),
            # The dispatcher: pending deliveries whose next attempt is due.
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(status="pending"),
                name="dlv_due",
            ),
            # The sweeper: sending deliveries whose lease ran out (worker killed mid-send).
            models.Index(
                fields=["sending_until"],
                condition=models.Q(status="sending"),
                name="dlv_lease",
            ),
            # Resuming a webhook: its paused deliveries.
            models.Index(
                fields=["webhook", "created_at"],
                condition=models.Q(status="paused"),
                name="dlv_paused",
            ),
        ]
        constraints = [
            # A run produces at most one delivery per event, however often recording is retried.
            models.UniqueConstraint(
                fields=["webhook", "run_id", "event_type"],
                condition=models.Q(is_test=False),
                name="dlv_unique_run_event",
            ),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def is_settling(self) -> bool:
        """Worth watching in the console: being sent now, or sent again within a minute."""
        from django.utils import timezone

        if self.status == DeliveryStatus.SENDING:
            return True
        return bool(
            self.status == DeliveryStatus.PENDING
            and self.next_attempt_at
            and (self.next_attempt_at - timezone.now()).total_seconds() < 60
        )


class WebhookAttempt(models.Model):
    """One HTTP attempt of a delivery; `attempt` numbers them from 1, never twice."""

    Status = AttemptStatus

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_rows"
    )
    attempt = models.PositiveIntegerField()
    # The schedule position this attempt was made at: 0 is the first send, n the n-th retry.
    retry = models.PositiveIntegerField()
    kind = models.CharField(max_length=10, choices=ClaimKind.choices)
    status = models.CharField(max_length=12, choices=AttemptStatus.choices)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    error_message = models.CharField(max_length=500, null=True, blank=True)
    # Console only: the first KB of the endpoint's answer and the round-trip time.
    response_body = models.TextField(blank=True, default="")
    # Console only: the answer's headers as [name, value] pairs in the order sent, bounded
    # (apps.common.http.HEADERS_KEPT pairs, values cut at HEADER_VALUE_MAX).
    response_headers = models.JSONField(
        default=list, db_default=models.Value([], models.JSONField())
    )
    duration_ms = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()

    class Meta:
        ordering = ["attempt"]
        constraints = [
            # The guard against a doubled attempt record, whatever the dispatchers do.
            models.UniqueConstraint(fields=["delivery", "attempt"], name="attempt_unique_number"),
        ]
