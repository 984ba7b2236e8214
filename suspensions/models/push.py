"""Push (docs/api.md, "8. Push: webhooks"): webhook endpoints, the outbox, messages and their delivery attempts."""

from django.db import models
from django.db.models import Q

from ..ids import uuid7
from .base import Scoped
from .sealed import SealedCharField


class WebhookFormat(models.TextChoices):
    STANDARD = "standard"
    SLACK = "slack"
    # An A2A task's push subscription (docs/api.md, "A2A"): bound to one run, its body the task's status update.
    A2A = "a2a"


# What an operator may create through the webhook API and console: an `a2a` endpoint is made by A2A only.
OPERATOR_WEBHOOK_FORMATS = (WebhookFormat.STANDARD.value, WebhookFormat.SLACK.value)


class EventType(models.TextChoices):
    """What an outbox event announces (docs/api.md, "8. Push: webhooks"): the `type` of every webhook body."""

    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_DECIDED = "approval.decided"
    APPROVAL_VOTE = "approval.vote"
    APPROVAL_ESCALATED = "approval.escalated"
    ADMISSION_CREATED = "admission.created"
    SUSPENSION_EXPIRED = "suspension.expired"
    # An operator gave a live pause more time (docs/api.md, "`POST /suspensions/{id}/extend` — more time").
    SUSPENSION_DEADLINE_EXTENDED = "suspension.deadline_extended"
    RUN_FINISHED = "run.finished"
    RUN_CLOSED = "run.closed"
    WEBHOOK_TEST = "webhook.test"
    # A signed seal over the run chains (docs/auditors.md, "What is recorded"), scope "": every workspace-level endpoint
    # gets it.
    AUDIT_CHECKPOINT = "audit.checkpoint"


class WebhookEndpoint(Scoped):
    """Where a scope's announced events are pushed; it receives its scope's events and every scope below it."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    url = models.URLField(max_length=2000)
    # Event types this endpoint wants; empty = every type.
    event_types = models.JSONField(default=list, blank=True)
    format = models.CharField(max_length=16, choices=WebhookFormat.choices, default=WebhookFormat.STANDARD)
    active = models.BooleanField(default=True)
    description = models.CharField(max_length=500, blank=True)
    # The signing secret (`whsec_<base64>`) must be kept to sign: shown once, never displayed again,
    # stored sealed under DATA_ENCRYPTION_KEYS (about 170 characters for a 50-character secret).
    secret = SealedCharField(max_length=400, editable=False)
    # After a rotation the old secret signs beside the new one until it expires.
    previous_secret = SealedCharField(max_length=400, blank=True, editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=200, blank=True)
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField()
    # An A2A push subscription (format a2a, docs/api.md, "A2A"): the one run whose events it gets, the task (the
    # pause) it follows, the client's config id, and the headers the client asked for (its token as
    # X-A2A-Notification-Token, its authentication as Authorization), stored sealed as JSON. Empty otherwise.
    run_id = models.UUIDField(null=True, blank=True)
    task_id = models.UUIDField(null=True, blank=True)
    config_id = models.CharField(max_length=200, blank=True, default="", db_default="")
    notify_headers = SealedCharField(max_length=4000, blank=True, default="", db_default="", editable=False)

    class Meta(Scoped.Meta):
        constraints = [
            models.UniqueConstraint(fields=["task_id", "config_id"], name="one_a2a_config_per_task_id"),
        ]
        indexes = [
            *Scoped.Meta.indexes,
            models.Index(fields=["run_id"], name="endpoint_bound_run", condition=Q(run_id__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"webhook {self.url} ({self.scope})"


class OutboxEvent(Scoped):
    """An announced event, written in the transaction of the change it announces (one row, one statement).

    The delivery task fans it out into one WebhookMessage per matching
    endpoint and marks it dispatched; a beat task re-enqueues rows whose
    task was lost.
    """

    id = models.BigAutoField(primary_key=True)
    run_id = models.UUIDField(null=True, blank=True)
    type = models.CharField(max_length=40)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField()
    dispatched_at = models.DateTimeField(null=True, blank=True)
    # The W3C traceparent of the transition (or the sweep's task) that wrote it, when traces are on
    # (docs/deploy.md, "Traces"): its webhook messages are sent in that trace. Empty otherwise.
    traceparent = models.CharField(max_length=55, blank=True, default="", db_default="")

    class Meta(Scoped.Meta):
        indexes = [
            *Scoped.Meta.indexes,
            # The beat's scan for events whose fan-out task was lost.
            models.Index(fields=["created_at"], name="outbox_undispatched", condition=Q(dispatched_at__isnull=True)),
            # The fan-out's hold: is an earlier event of this run still undispatched? Without it each held event
            # read every undispatched entry (and, until a VACUUM, every dispatched one): a whole PostgreSQL core
            # once the soak's backlog passed ~40,000 (docs/benchmarks.md, "Soak").
            models.Index(
                fields=["run_id", "id"], name="outbox_undispatched_run", condition=Q(dispatched_at__isnull=True)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.id}"


class MessageStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookMessage(Scoped):
    """One event for one endpoint: its id is the `webhook-id` on every attempt, so receivers dedupe on it."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # Indexed as the first column of message_run_order and one_message_per_endpoint_event.
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="messages", db_index=False)
    event_id = models.BigIntegerField()
    run_id = models.UUIDField(null=True, blank=True)
    type = models.CharField(max_length=40)
    # The exact body sent on every attempt (its bytes are what the signature covers).
    body = models.TextField()
    status = models.CharField(max_length=16, choices=MessageStatus.choices, default=MessageStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    created_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    # Its outbox event's traceparent: each POST is a span of that trace and sends its own traceparent header.
    traceparent = models.CharField(max_length=55, blank=True, default="", db_default="")

    class Meta(Scoped.Meta):
        constraints = [models.UniqueConstraint(fields=["endpoint", "event_id"], name="one_message_per_endpoint_event")]
        indexes = [
            *Scoped.Meta.indexes,
            # Due messages, oldest first, and a run's earlier messages to the same endpoint (per-run order).
            models.Index(fields=["next_attempt_at"], name="message_due", condition=Q(status="pending")),
            models.Index(fields=["endpoint", "run_id", "event_id"], name="message_run_order"),
        ]

    def __str__(self) -> str:
        return f"{self.type} to {self.endpoint_id} ({self.status})"


class DeliveryAttempt(models.Model):
    id = models.BigAutoField(primary_key=True)
    # Indexed as the first column of one_attempt_per_number.
    message = models.ForeignKey(WebhookMessage, on_delete=models.CASCADE, related_name="attempt_rows", db_index=False)
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "number"], name="one_attempt_per_number")]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.message_id}"
