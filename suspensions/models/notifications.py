"""Notifications as deliveries (docs/notifications.md): approver emails and Slack messages, and the routes that add
them.

A Notification is to a person or a channel what a WebhookMessage is to an
endpoint: written in the outbox fan-out's transaction (or the reminder's
claim), delivered from Celery outside any transaction, retried on the
webhooks' schedule, `failed` after the last attempt and kept. The unique
(approval, channel, recipient, kind, step) is the dedupe: nobody gets the same
request twice, however often the fan-out or the reminder runs.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from ..ids import uuid7
from .base import Scoped
from .push import EventType, MessageStatus


class NotificationChannel(models.TextChoices):
    EMAIL = "email"
    SLACK = "slack"


class NotificationKind(models.TextChoices):
    REQUEST = "request"
    REMINDER = "reminder"
    ESCALATION = "escalation"
    # A Slack message updated with the outcome once the approval is decided or expired.
    DECIDED = "decided"


# The events that ask someone to decide, and the kind of notification each asks with.
ASKING = {
    EventType.APPROVAL_REQUESTED.value: NotificationKind.REQUEST,
    EventType.APPROVAL_ESCALATED.value: NotificationKind.ESCALATION,
}
# The events that end an approval: every Slack message that asked is updated with the outcome.
ENDING = frozenset({EventType.APPROVAL_DECIDED.value, EventType.SUSPENSION_EXPIRED.value})
# The event types a route may name (empty: all of them).
ROUTE_EVENT_TYPES = (*ASKING, *sorted(ENDING))
# The event types a webhook endpoint may name.
WEBHOOK_EVENT_TYPES = tuple(EventType.values)


class NotificationRoute(Scoped):
    """An extra channel for a scope's approval events (an address, or a Slack channel), and every scope below it.

    Approvers of a covering scope get their own email without a route; a route adds a channel.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    kind = models.CharField(max_length=16, choices=NotificationChannel.choices)
    # An email address, or a Slack channel id (C0123ABC).
    target = models.CharField(max_length=320)
    # Event types this route wants; empty = every type that notifies.
    event_types = models.JSONField(default=list, blank=True)
    active = models.BooleanField(default=True)
    description = models.CharField(max_length=500, blank=True)
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=NotificationChannel.values), name="route_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} route to {self.target} ({self.scope})"


class Notification(Scoped):
    """One message about one approval to one recipient on one channel, delivered at least once."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # The approval (= its suspension id).
    approval_id = models.UUIDField()  # indexed as the first column of one_notification_per_recipient
    run_id = models.UUIDField()
    # The OutboxEvent that caused it; null for a reminder.
    event_id = models.BigIntegerField(null=True, blank=True)
    channel = models.CharField(max_length=16, choices=NotificationChannel.choices)
    kind = models.CharField(max_length=16, choices=NotificationKind.choices)
    # An email address, or a Slack channel id.
    recipient = models.CharField(max_length=320)
    # The person, when it is a person's own (an approver's email): their one-click links act as them.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="notifications"
    )
    route_id = models.UUIDField(null=True, blank=True)
    # A delegate asked in place of someone away (docs/identity.md, "Delegation"): that person's username. Such an
    # email carries no one-click links, and a Slack one is a direct message without buttons: the delegate decides in
    # the console, choosing to decide for them.
    acting_for = models.CharField(max_length=150, blank=True, default="")
    status = models.CharField(max_length=16, choices=MessageStatus.choices, default=MessageStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    created_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    # A claim's lease: a worker that died mid-send leaves the row due again once it passes.
    leased_until = models.DateTimeField(null=True, blank=True)
    # An escalation chain's step (its index + 1; docs/policies.md, "Escalation chains"), 0 for everything else:
    # each step asks its people once, even those an earlier step asked.
    step = models.PositiveSmallIntegerField(default=0)
    # chat.postMessage's ts: channel (recipient) and ts identify the Slack message to update.
    slack_ts = models.CharField(max_length=64, blank=True)

    class Meta(Scoped.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["approval_id", "channel", "recipient", "kind", "step"], name="one_notification_per_recipient"
            ),
            models.CheckConstraint(condition=Q(channel__in=NotificationChannel.values), name="notification_channel"),
            models.CheckConstraint(condition=Q(kind__in=NotificationKind.values), name="notification_kind_valid"),
        ]
        indexes = [
            *Scoped.Meta.indexes,
            models.Index(fields=["next_attempt_at"], name="notification_due", condition=Q(status="pending")),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.channel} to {self.recipient} ({self.status})"
