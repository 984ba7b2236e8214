"""Notifications as deliveries (docs/notifications.md, "How notifications are delivered"): approver emails and Slack
messages, at least once.

Writing: `write_for_events` runs in the outbox fan-out's transaction (beside
the webhook messages), `write_reminders` in the reminder's claim. Each writes
its rows with one `bulk_create(ignore_conflicts=True)`: the unique (approval,
channel, recipient, kind) makes a second fan-out of the same event, or an
approver who is also a route's address, one notification, not two. The rows'
delivery is enqueued on commit; a lost enqueue is found by the beat
(`deliver_due`). Nobody is asked who may not answer: the requester of an
approval under `exclude_requester` (docs/policies.md) gets no request.

Delivering: `claim` locks a due row FOR UPDATE SKIP LOCKED and leases it
(WEBHOOK_LEASE_SECONDS) in one short transaction; the sender runs after its
commit, outside any transaction; `record` settles the row: delivered, or
tried again on the webhooks' schedule (retries.retry_wait), `failed` after
the last attempt and kept. A worker that dies mid-send leaves the row leased:
once the lease is over it is due again (at least once).

Senders: one function per channel, `send(notification) -> None`, raising on
failure. The registry names them by dotted path and imports them when a
notification is sent: the Slack package imports the decide service for its
interactions, so importing it here would be a cycle (services -> slack -> services).
"""

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils.module_loading import import_string

from .. import scopes, selectors
from ..clock import db_now
from ..models import (
    ASKING,
    ENDING,
    Approval,
    ApprovalStatus,
    MessageStatus,
    Notification,
    NotificationChannel,
    NotificationKind,
    NotificationRoute,
    OutboxEvent,
    SlackIdentity,
)
from .delegations import delegates_of
from .retries import COUNTDOWN_LIMIT, retry_wait

log = logging.getLogger(__name__)

SENDERS: dict[str, str] = {
    NotificationChannel.EMAIL: "suspensions.notify.send",
    NotificationChannel.SLACK: "suspensions.slack.sender.send",
}
# Tasks are enqueued by name: services never import the tasks module (it imports them).
DELIVER_TASK = "suspensions.tasks.deliver_notifications"
# ASKING (the events that ask someone to decide), ENDING (those that end an approval) and ROUTE_EVENT_TYPES (the
# ones a route may name) are declared beside the models (models/notifications.py): the wire validates against them.
# Notifications per delivery task: at EMAIL_TIMEOUT (10 s) each, a task stays inside its soft time limit
# (tasks.DELIVERY_SOFT_LIMIT, 120 s), which would interrupt a send and leave its row to be sent again.
BATCH = 10


def sender_for(channel: str) -> Callable[[Any], None]:
    """The sender of `channel` (KeyError for a channel nobody sends)."""
    sender: Callable[[Any], None] = import_string(SENDERS[channel])
    return sender


def slack_configured() -> bool:
    """Slack is on only with both the bot token (to post) and the signing secret (to trust its presses)."""
    return bool(settings.SLACK_BOT_TOKEN and settings.SLACK_SIGNING_SECRET)


# -- writing -----------------------------------------------------------------------------------


def write_for_events(events: Sequence[OutboxEvent], now: datetime) -> list[Notification]:
    """The notifications the fan-out's `events` ask for, inserted in its transaction; their delivery on commit."""
    ids = {str(e.data.get("suspension_id")) for e in events if isinstance(e.data, dict) and e.data.get("suspension_id")}
    if not ids:
        return []
    approvals = {str(a.pk): a for a in Approval.objects.filter(pk__in=ids)}
    rows: list[Notification] = []
    for event in events:
        approval = approvals.get(str(event.data.get("suspension_id"))) if isinstance(event.data, dict) else None
        if approval is None:
            continue
        if event.type in ASKING and approval.status == ApprovalStatus.PENDING:
            step = event.data.get("step")
            if isinstance(step, int) and 0 <= step < len(approval.chain):
                rows += chain_step(approval, step, now, event_id=event.id, event_type=event.type)
            else:
                rows += asking(approval, ASKING[event.type], now, event_id=event.id, event_type=event.type)
        elif event.type in ENDING:
            rows += slack_updates(approval, now, event_id=event.id)
    return insert(rows)


def write_reminders(approvals: Iterable[Approval], now: datetime) -> list[Notification]:
    """The reminder emails of claimed approvals, inserted in the claim's transaction; their delivery on commit."""
    rows = [n for a in approvals for n in asking(a, NotificationKind.REMINDER, now)]
    return insert(rows)


def insert(rows: list[Notification]) -> list[Notification]:
    """One statement for all the rows (a duplicate is left as it is); the new ones' delivery enqueued on commit."""
    if not rows:
        return []
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
    enqueue([n.id for n in rows])
    return rows


def asking(
    approval: Approval, kind: str, now: datetime, *, event_id: int | None = None, event_type: str = ""
) -> list[Notification]:
    """One email per approver who may answer, one per matching email route, one Slack post per Slack route.

    An escalation asks the approvers covering the parent scope (docs/policies.md, "What happens at the deadline").
    A reminder goes to the approvers only: routes add channels to events.
    """
    scope = scopes.parent(approval.scope) if kind == NotificationKind.ESCALATION else approval.scope
    people = selectors.approvers_covering(scope)
    excluded = approval.requester_user_id if approval.exclude_requester else None
    if excluded is not None:
        people = people.exclude(pk=excluded)
    made = _made(approval, kind, now, event_id)
    asked = list(people)
    rows = [made(NotificationChannel.EMAIL, user.email, user=user) for user in asked]
    rows += delegated(approval, asked, excluded, made, now)
    if kind == NotificationKind.REMINDER:
        return rows
    excluded_email = _email_of(excluded)
    for route in routes_for(approval.scope, event_type):
        if route.kind == NotificationChannel.EMAIL and route.target.lower() != excluded_email:
            rows.append(made(NotificationChannel.EMAIL, route.target, route_id=route.id))
        elif route.kind == NotificationChannel.SLACK and slack_configured():
            rows.append(_slack_post(made, route))
    return rows


def chain_step(
    approval: Approval, step: int, now: datetime, *, event_id: int | None, event_type: str
) -> list[Notification]:
    """An escalation chain's step (docs/policies.md, "Escalation chains"): whom its `notify` names, asked once.

    Only approvers of the approval's scope are asked (those holding `approver` in it or above it): a `scopes`
    entry asks the approvers of that scope (the pause's own or one above it) and adds its notification routes
    (email, Slack); `groups` and `people` pick approvers by user group and by username. Anyone else named is
    skipped, never told: a chain cannot reach outside who may decide. The requester is left out as for a request.
    """
    notify = approval.chain[step].get("notify", {})
    approvers = selectors.approvers_covering(approval.scope)
    picked = Q(pk__in=[])
    for scope in notify.get("scopes", []):
        picked |= Q(pk__in=selectors.approvers_covering(scope).values("pk"))
    if notify.get("groups"):
        picked |= Q(groups__name__in=notify["groups"])
    if notify.get("people"):
        picked |= Q(username__in=notify["people"])
    people = approvers.filter(picked)
    excluded = approval.requester_user_id if approval.exclude_requester else None
    if excluded is not None:
        people = people.exclude(pk=excluded)
    made = _made(approval, NotificationKind.ESCALATION, now, event_id, step=step + 1)
    rows = {user.email.lower(): made(NotificationChannel.EMAIL, user.email, user=user) for user in people.distinct()}
    excluded_email = _email_of(excluded)
    routes = {r.id: r for scope in notify.get("scopes", []) for r in routes_for(scope, event_type)}
    slack = []
    for route in routes.values():
        if route.kind == NotificationChannel.EMAIL and route.target.lower() not in (excluded_email, *rows):
            rows[route.target.lower()] = made(NotificationChannel.EMAIL, route.target, route_id=route.id)
        elif route.kind == NotificationChannel.SLACK and slack_configured():
            slack.append(_slack_post(made, route))
    return [*rows.values(), *slack]


def delegated(
    approval: Approval, people: list[Any], excluded: int | None, made: Callable[..., Notification], now: datetime
) -> list[Notification]:
    """The delegates of `people` holding a delegation over the approval's scope now (docs/identity.md, "Delegation"):
    each asked by email, and by a Slack direct message where their Slack identity is linked, for whom they stand in.

    Not the requester, nor a delegate asked already as an approver (they choose in the console); once per delegate.
    """
    asked = {user.pk for user in people} | {excluded}
    rows: dict[int, list[Notification]] = {}
    for d in delegates_of([user.pk for user in people if user.pk != excluded], approval.scope, now):
        to = d.to_user
        if to.pk in asked or to.pk in rows or not (to.is_active and to.is_staff and to.email):
            continue
        name = d.from_user.get_username()
        rows[to.pk] = [made(NotificationChannel.EMAIL, to.email, acting_for=name)]
        slack_id = SlackIdentity.objects.filter(user_id=to.pk).values_list("slack_user_id", flat=True).first()
        if slack_id and slack_configured():
            rows[to.pk].append(made(NotificationChannel.SLACK, slack_id, acting_for=name))
    return [n for found in rows.values() for n in found]


def _slack_post(made: Callable[..., Notification], route: NotificationRoute) -> Notification:
    """A Slack route's post; `failed` at once, never sent, once its channel is no longer granted to its scope."""
    row = made(NotificationChannel.SLACK, route.target, route_id=route.id)
    if not selectors.slack_channel_granted(route.target, route.scope):
        # The grant was removed after the route was made (docs/notifications.md): kept as a failure, visible.
        row.status = MessageStatus.FAILED
        row.last_error = f"Slack channel {route.target} is not granted to scope '{route.scope}'"
    return row


def slack_updates(approval: Approval, now: datetime, *, event_id: int) -> list[Notification]:
    """One DECIDED Slack notification per channel a Slack message asked in: it updates that message."""
    asked = Notification.objects.filter(
        approval_id=approval.pk,
        channel=NotificationChannel.SLACK,
        kind__in=[NotificationKind.REQUEST, NotificationKind.ESCALATION],
        acting_for="",  # a delegate's direct message has no buttons to take away
    )
    made = _made(approval, NotificationKind.DECIDED, now, event_id)
    channels = dict.fromkeys(asked.order_by("created_at").values_list("recipient", flat=True))
    return [made(NotificationChannel.SLACK, channel) for channel in channels]


def _made(
    approval: Approval, kind: str, now: datetime, event_id: int | None, step: int = 0
) -> Callable[..., Notification]:
    def made(channel: str, recipient: str, **fields: Any) -> Notification:
        n = Notification(
            step=step,
            approval_id=approval.pk,
            run_id=approval.run_id,
            event_id=event_id,
            channel=channel,
            kind=kind,
            recipient=recipient,
            next_attempt_at=now,
            created_at=now,
            **fields,
        )
        n.stamp_scope(approval.scope)
        return n

    return made


def _email_of(user_id: int | None) -> str:
    if user_id is None:
        return ""
    email = get_user_model().objects.filter(pk=user_id).values_list("email", flat=True).first()
    return (email or "").lower()


def routes_for(scope: str, event_type: str) -> list[NotificationRoute]:
    """Active routes of `scope` and the scopes above it that want `event_type` (empty types: all), oldest first."""
    covering = [prefix for prefix in scopes.levels(scope).values() if prefix]
    routes = NotificationRoute.objects.filter(active=True, scope__in=covering).order_by("created_at")
    return [r for r in routes if not r.event_types or event_type in r.event_types]


def enqueue(ids: Sequence[Any], countdown: float | None = None) -> None:
    """On commit, one delivery task for these notifications; a lost one is the beat's (`deliver_due`)."""

    def send() -> None:
        for start in range(0, len(ids), BATCH):
            current_app.send_task(
                DELIVER_TASK, args=[[str(i) for i in ids[start : start + BATCH]]], countdown=countdown
            )

    if ids:
        # robust: a broker that is down must not undo what the transaction wrote.
        transaction.on_commit(send, robust=True)


# -- delivering --------------------------------------------------------------------------------


def due() -> Q:
    """Pending, its time come, not leased (or its lease over): the notification_due index's rows."""
    return Q(status=MessageStatus.PENDING, next_attempt_at__lte=Now()) & (
        Q(leased_until__isnull=True) | Q(leased_until__lte=Now())
    )


def claim(ids: Sequence[UUID | str] | None = None, *, limit: int = BATCH) -> list[Notification]:
    """Lease up to `limit` due notifications (of `ids`, or those due longest); one short committed transaction.

    SKIP LOCKED: a row another worker is claiming is theirs; a leased row is
    nobody else's until the lease is over.
    """
    with transaction.atomic():
        rows = Notification.objects.select_for_update(skip_locked=True).filter(due())
        if ids is not None:
            rows = rows.filter(pk__in=[str(i) for i in ids])
        claimed = list(rows.order_by("next_attempt_at")[:limit])
        if claimed:
            now = db_now()
            until = now + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS)
            Notification.objects.filter(pk__in=[n.pk for n in claimed]).update(leased_until=until)
    return claimed


def send(notification: Notification) -> str:
    """Send one claimed notification through its channel's sender, outside any transaction; '' or the error."""
    assert not connection.in_atomic_block, "no network I/O inside a transaction (STYLE 17)"
    try:
        sender_for(notification.channel)(notification)
    except Exception as exc:  # noqa: BLE001 - any failure of a sender is a failed attempt, recorded and retried
        log.warning("notification %s failed: %s", notification.pk, exc, extra={"notification_id": str(notification.pk)})
        return f"{type(exc).__name__}: {exc}"[:500] or "failed"
    return ""


def record(notification: Notification, error: str) -> str:
    """Settle the attempt: delivered, retried later, or failed. A lost connection is reopened and tried again.

    The send has happened: losing its outcome would send it again once the
    lease is over (the database restarting, or its connections terminated,
    is what made approver emails go missing or twice before).
    """
    for tries in range(3):
        try:
            return _record(notification, error)
        except (OperationalError, InterfaceError):
            if tries == 2:
                raise
            connection.close()
            time.sleep(0.2 * (tries + 1))
    raise AssertionError("unreachable")


def _record(notification: Notification, error: str) -> str:
    with transaction.atomic():
        now = db_now()
        row = Notification.objects.select_for_update().filter(pk=notification.pk).first()
        if row is None:
            return "stale"
        number = row.attempts + 1
        fields: dict[str, Any] = {"attempts": number, "leased_until": None}
        if not error:
            result = "delivered"
            fields |= {"status": MessageStatus.DELIVERED, "delivered_at": now, "last_error": ""}
            fields["slack_ts"] = notification.slack_ts or row.slack_ts
        else:
            wait = retry_wait(number)
            fields["last_error"] = error
            if wait is None:
                result, fields["status"] = "failed", MessageStatus.FAILED
            else:
                result, fields["next_attempt_at"] = "retry", now + timedelta(seconds=wait)
                if wait <= COUNTDOWN_LIMIT:
                    enqueue([row.pk], countdown=wait + 0.05)
        Notification.objects.filter(pk=row.pk).update(**fields)
    log.info("notification %s: %s", notification.pk, result, extra={"notification_id": str(notification.pk)})
    return result


def deliver(ids: Sequence[UUID | str] | None = None, *, limit: int = BATCH) -> list[str]:
    """Claim, send and record the due notifications among `ids` (or the due ones), up to `limit`; the outcomes.

    One at a time: a worker holds one lease at most, so a slow mail server
    (EMAIL_TIMEOUT per attempt) never outlasts the lease of rows still
    waiting their turn in this call, which another worker would send again.
    """
    outcomes: list[str] = []
    while len(outcomes) < limit and (claimed := claim(ids, limit=1)):
        outcomes.append(record(claimed[0], send(claimed[0])))
    return outcomes


def deliver_due(*, max_seconds: float) -> int:
    """The beat's pass: deliver due notifications one by one until none is left or `max_seconds` passed."""
    began, count = time.monotonic(), 0
    while time.monotonic() - began < max_seconds:
        if not deliver(limit=1):
            break
        count += 1
    return count


def has_due() -> bool:
    return Notification.objects.filter(due()).exists()
