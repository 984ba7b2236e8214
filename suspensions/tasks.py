"""Celery tasks: thin wrappers around services (STYLE: tasks as a thin interface)."""

import logging
import time
from datetime import timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from slack_sdk.errors import SlackClientError

from . import services
from .observability import heartbeat, metrics
from .services import audit, delegation_notices, delivery, idempotency, notifications, outbox, reminders, retention
from .slack import answers

log = logging.getLogger(__name__)

# The soft limit interrupts a sweep stuck past it (its open batch rolls back
# and stays due); the hard limit kills the child if even that hangs. The loop
# itself stops well before the soft limit, between batches.
SOFT_LIMIT = settings.SWEEP_TIME_LIMIT_SECONDS
HARD_LIMIT = SOFT_LIMIT + 30


@shared_task(
    name="suspensions.tasks.sweep_expired", soft_time_limit=SOFT_LIMIT, time_limit=HARD_LIMIT, ignore_result=True
)
def sweep_expired() -> dict[str, Any]:
    """Run the expiry sweep (T9) once. Two of these at once are harmless: see services.sweep.

    A sweep that returns records its heartbeat (what /readyz checks) and its
    counts; one that raises counts as a failure and leaves the heartbeat alone.
    """
    began = time.monotonic()
    try:
        result = services.expire_suspensions(max_seconds=SOFT_LIMIT * 0.8).as_dict()
        heartbeat.beat()
    except BaseException:
        # BaseException: the soft time limit and a worker's shutdown end a sweep too.
        metrics.sweep_failed(seconds=time.monotonic() - began)
        raise
    # After the sweep's own commits (each batch is one), so these count only what is written.
    metrics.sweep_finished(result, seconds=time.monotonic() - began)
    log.info("sweep finished: %(expired)s expired, %(dropped)s dropped, %(failed)s failed", result, extra=result)
    return result


@shared_task(name="suspensions.tasks.audit_checkpoint", ignore_result=True)
def audit_checkpoint() -> int:
    """Seal the audit chains that changed since the last tick, one checkpoint per workspace (docs/auditors.md);
    beat. Returns how many checkpoints it wrote."""
    return len(audit.write_checkpoint())


@shared_task(name="suspensions.tasks.remind_approvers", ignore_result=True)
def remind_approvers() -> int:
    """Write the one reminder of each approval past 80% of its time to deadline (docs/notifications.md, "Email"); beat,
    every minute.

    Each claim writes its approvals' reminder notifications in its transaction
    (one reminder per approval and approver); two of these at once claim
    disjoint approvals. The emails leave from `deliver_notifications`.
    """
    reminded = reminders.send_due_reminders()
    if reminded:
        log.info("reminded approvers of %s approvals", reminded, extra={"reminded": reminded})
    return reminded


@shared_task(name="suspensions.tasks.forget_idempotency_keys", ignore_result=True)
def forget_idempotency_keys() -> int:
    """Beat, hourly: delete Idempotency-Keys past their 24 hours (docs/api.md, "4. Claims and recovery"); a key kept
    longer is never replayed."""
    return idempotency.forget_expired()


# -- push (docs/api.md, "8. Push: webhooks") ----------------------------------------------------

# An outbox row still undispatched this long after its commit lost its fan-out task (or its worker).
LOST_AFTER = timedelta(seconds=5)
# A send is bounded per phase (outbound.TIMEOUT); these bound a receiver that trickles its answer.
# A delivery interrupted by either stays pending under its lease and is sent again, its attempt counted.
DELIVERY_SOFT_LIMIT = 120
DELIVERY_HARD_LIMIT = DELIVERY_SOFT_LIMIT + 30


@shared_task(name="suspensions.tasks.fan_out_outbox", ignore_result=True)
def fan_out_outbox(ids: list[int] | None = None) -> int:
    """Fan out outbox rows into webhook messages, enqueued on commit with their ids (None: every undispatched row)."""
    if ids is None:
        return outbox.fan_out_lost(older_than=timedelta(0), max_seconds=settings.WEBHOOK_SWEEP_SECONDS)
    return len(outbox.fan_out(ids=ids).dispatched)


@shared_task(
    name="suspensions.tasks.deliver_endpoint",
    soft_time_limit=DELIVERY_SOFT_LIMIT,
    time_limit=DELIVERY_HARD_LIMIT,
    ignore_result=True,
)
def deliver_endpoint(endpoint_id: str) -> int:
    """Deliver one endpoint's due messages in batches over one connection (delivery.deliver_endpoint); how many.

    Enqueued by a fan-out, a retry's countdown, the beat, or a task that
    handed the rest over. Two at once for one endpoint claim disjoint batches.
    """
    return len(delivery.deliver_endpoint(endpoint_id))


@shared_task(name="suspensions.tasks.webhook_sweep", ignore_result=True)
def webhook_sweep() -> None:
    """Beat: fan out outbox rows whose task was lost; hand each endpoint with messages due soon to a delivery task.

    A delivery task is enqueued for the moment the endpoint's first message
    is due (a retry's wait or a dead worker's lease ending within one beat
    interval), with no `expires`: queued behind a backlog it still runs.
    """
    # Bounded: this task shares the `celery` queue with the expiry sweep.
    outbox.fan_out_lost(older_than=LOST_AFTER, max_seconds=settings.WEBHOOK_SWEEP_SECONDS)
    for endpoint_id, wait in delivery.due_endpoints(within=settings.WEBHOOK_SWEEP_SECONDS):
        deliver_endpoint.apply_async(args=[str(endpoint_id)], countdown=wait + 0.05 if wait else None)


@shared_task(
    name="suspensions.tasks.deliver_notifications",
    soft_time_limit=DELIVERY_SOFT_LIMIT,
    time_limit=DELIVERY_HARD_LIMIT,
    ignore_result=True,
)
def deliver_notifications(ids: list[str]) -> int:
    """Deliver the due notifications among `ids` (approver emails, Slack messages); enqueued on their commit."""
    return len(notifications.deliver(ids))


@shared_task(
    name="suspensions.tasks.notification_sweep",
    soft_time_limit=DELIVERY_SOFT_LIMIT,
    time_limit=DELIVERY_HARD_LIMIT,
    ignore_result=True,
)
def notification_sweep() -> int:
    """Beat: deliver due notifications (retries, lost tasks, expired leases) for about one beat interval."""
    return notifications.deliver_due(max_seconds=settings.WEBHOOK_SWEEP_SECONDS)


@shared_task(name="suspensions.tasks.announce_delegations", ignore_result=True)
def announce_delegations(ids: list[str] | None = None) -> int:
    """Tell delegates their delegation started (docs/identity.md, "Delegation"): enqueued on a delegation's commit
    (`ids`), and by beat for the ones that start later or whose task was lost."""
    return delegation_notices.announce(ids)


# -- Slack answers (docs/notifications.md, Slack): sent after the interaction's request has answered --------

# A failed connection is tried again soon: an answer is only worth something while the presser looks.
SLACK_ANSWER_RETRY = {"autoretry_for": (OSError, SlackClientError), "max_retries": 2, "default_retry_delay": 2}


@shared_task(name=answers.EPHEMERAL_TASK, ignore_result=True, **SLACK_ANSWER_RETRY)
def slack_ephemeral(channel: str, slack_user: str, text: str) -> None:
    """Tell a presser privately what their press did (slack.answers.tell_later)."""
    answers.post_ephemeral(channel, slack_user, text)


@shared_task(name=answers.OUTCOME_TASK, ignore_result=True, **SLACK_ANSWER_RETRY)
def slack_show_outcome(approval_id: str, channel: str, ts: str) -> None:
    """Edit an out-of-date message to its approval's outcome (slack.answers.show_outcome_later)."""
    answers.show_outcome(approval_id, channel, ts)


@shared_task(name="suspensions.tasks.audit_partitions", ignore_result=True)
def audit_partitions() -> int:
    """Create the events table's partitions ahead, then prune what AUDIT_RETENTION_DAYS lets go (docs/auditors.md,
    "Retention and legal holds"); beat, hourly. Returns how many events were pruned."""
    retention.ensure_partitions()
    record = retention.prune()
    return record.events if record else 0
