"""Webhook delivery (DESIGN §14): claim a due message, send it outside any transaction, record the attempt.

Lock contract: a claim is one short transaction that locks one due message
`FOR UPDATE SKIP LOCKED OF message` and moves its `next_attempt_at` a lease
ahead (WEBHOOK_LEASE_SECONDS), then commits; the POST happens after that
commit, with no lock held; the outcome is recorded in another short
transaction (the endpoint row first when a 410 disables it, then the
message). A worker that dies mid-send leaves the message pending under its
lease: once the lease is over it is due again and sent again (at least once;
receivers dedupe on `webhook-id`, the message id).

Order: a message is not claimed while an earlier message (smaller event id)
of the same run to the same endpoint is still pending; when one is settled,
the next of its run is enqueued. A delivery task (`deliver_in_order`)
delivers that next one itself instead, right after, up to CHAIN_LIMIT
messages or CHAIN_SECONDS, then enqueues the rest: a run's chain of messages
costs one task, not one per message plus a no-op per blocked one
(docs/benchmarks.md, "Chained backlog drain"). The fan-out enqueues only the
first message of each (endpoint, run) in its batch for the same reason; the
beat's `deliver_due` stays the net under every hand-over.

Retries: each failed attempt n waits WEBHOOK_RETRY_SCHEDULE[n-1] (with ±20%
jitter); past the schedule the message is `failed`. Waits up to
COUNTDOWN_LIMIT are a Celery countdown; the beat's `deliver_due` pass is the
safety net for those and the only path for longer ones (a countdown of hours
would sit in the broker past its visibility timeout). `attempts` counts every
attempt of the message, redeliveries included: a redelivered dead message
gets one attempt, then is dead again unless it succeeds.
"""

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet

from .. import digests, keys, outbound
from ..clock import db_now
from ..models import DeliveryAttempt, MessageStatus, WebhookEndpoint, WebhookFormat, WebhookMessage
from ..observability import metrics
from . import outbox
from .retries import COUNTDOWN_LIMIT, retry_wait
from .sql import push

log = logging.getLogger(__name__)

GONE = 410
# A task delivers the run's next messages itself up to this many, or while this little time has passed, so a
# long chain (or a slow receiver) does not keep a worker from the other runs' messages; the rest is enqueued.
CHAIN_LIMIT = 8
CHAIN_SECONDS = 1.0


@dataclass(frozen=True)
class Outgoing:
    """A claimed message and what sending it needs, read in the claim's transaction."""

    id: UUID
    endpoint_id: UUID
    run_id: UUID | None
    url: str
    format: str
    secrets: tuple[str, ...]
    body: str
    claimed_at: datetime


def due(now: datetime) -> QuerySet[WebhookMessage]:
    """Pending messages due at `now` of active endpoints with no earlier pending message of their run (message_due)."""
    earlier = WebhookMessage.objects.filter(
        endpoint_id=OuterRef("endpoint_id"),
        run_id=OuterRef("run_id"),
        event_id__lt=OuterRef("event_id"),
        status=MessageStatus.PENDING,
    )
    return WebhookMessage.objects.filter(
        status=MessageStatus.PENDING, next_attempt_at__lte=now, endpoint__active=True
    ).exclude(Exists(earlier))


def claim(message_id: UUID | str | None = None) -> Outgoing | None:
    """Claim `message_id` (or the message due longest) if it is due and free; None otherwise.

    One statement (sql/push.py's CLAIM_MESSAGE), its own short transaction: SKIP LOCKED
    (a message another worker holds is theirs), the lease written and
    committed before anyone sends.
    """
    params: dict[str, Any] = {"pending": MessageStatus.PENDING.value, "lease": float(settings.WEBHOOK_LEASE_SECONDS)}
    if message_id is not None:
        params["id"] = message_id if isinstance(message_id, UUID) else UUID(str(message_id))
    with connection.cursor() as cursor:
        cursor.execute(push.CLAIM_ANY_MESSAGE if message_id is None else push.CLAIM_MESSAGE, params)
        row = cursor.fetchone()
    if row is None:
        return None
    id_, endpoint_id, run_id, url, format_, secret, previous, rotated, body, now = row
    secrets = [keys.unseal(secret)]  # raw SQL reads the columns sealed (suspensions/keys.py)
    if previous and rotated is not None and rotated > now:
        secrets.append(keys.unseal(previous))
    return Outgoing(
        id=id_,
        endpoint_id=endpoint_id,
        run_id=run_id,
        url=url,
        format=format_,
        secrets=tuple(secrets),
        body=body,
        claimed_at=now,
    )


def send(outgoing: Outgoing) -> outbound.Outcome:
    """POST the claimed message: signed (standard) or plain (Slack). Call outside any transaction."""
    assert not transaction.get_connection().in_atomic_block, "no network I/O inside a transaction (STYLE 17)"
    headers: dict[str, str] = {}
    if outgoing.format != WebhookFormat.SLACK:
        headers = outbound.signature_headers(str(outgoing.id), outgoing.body, outgoing.secrets, outgoing.claimed_at)
    return outbound.post(outgoing.url, outgoing.body, headers)


def record(outgoing: Outgoing, outcome: outbound.Outcome) -> str:
    """Write the attempt and settle the message: delivered, retried later, or failed. Returns the metric outcome.

    The run's next message, if settling this one freed it, is enqueued (see `settle`).
    """
    result, following = settle(outgoing, outcome)
    if following is not None:
        outbox.enqueue_delivery([following])
    return result


def settle(outgoing: Outgoing, outcome: outbound.Outcome) -> tuple[str, UUID | None]:
    """`record` without the enqueue: (the metric outcome, the run's next pending message it freed or None).

    One short transaction: on a 410 the endpoint row is locked first (it is
    disabled and all its pending messages fail), then the message row. The
    next message is there only when this one is settled (delivered, failed,
    gone); the caller owes it a delivery: enqueued, or delivered at once.
    """
    result, following = _record(outgoing, outcome)
    metrics.webhook_delivery(result)
    # The endpoint's id, never its URL: a receiver's URL may carry its token.
    line: dict[str, Any] = {"message_id": str(outgoing.id), "endpoint_id": str(outgoing.endpoint_id), "outcome": result}
    line |= {"status_code": outcome.status_code, "error": outcome.error, "duration_ms": outcome.duration_ms}
    log.info("webhook attempt %s: %s", outgoing.id, result, extra=line)
    return result, following


def _record(outgoing: Outgoing, outcome: outbound.Outcome) -> tuple[str, UUID | None]:
    with transaction.atomic():
        now = db_now()
        gone = outcome.status_code == GONE
        if gone:
            _disable(outgoing.endpoint_id, now)
        message = WebhookMessage.objects.select_for_update().filter(pk=outgoing.id).first()
        if message is None:
            return "stale", None  # its endpoint was deleted meanwhile, messages and all
        number = message.attempts + 1
        DeliveryAttempt.objects.create(
            message=message,
            number=number,
            at=outgoing.claimed_at,
            status_code=outcome.status_code,
            error=outcome.error,
            duration_ms=outcome.duration_ms,
        )
        result, fields = _settle(message, outcome, number, now, gone)
        WebhookMessage.objects.filter(pk=message.pk).update(attempts=number, **fields)
        if result in ("delivered", "failed", "gone"):
            return result, _next_of_run(outgoing)
        if "next_attempt_at" in fields:
            _retry_soon(outgoing.id, (fields["next_attempt_at"] - now).total_seconds())
    return result, None


def _settle(
    message: WebhookMessage, outcome: outbound.Outcome, number: int, now: datetime, gone: bool
) -> tuple[str, dict[str, Any]]:
    if outcome.delivered:
        # Delivered even if a duplicate attempt settled it otherwise meanwhile: the receiver has it.
        return "delivered", {"status": MessageStatus.DELIVERED, "delivered_at": now}
    if gone:
        return "gone", {"status": MessageStatus.FAILED}
    if message.status != MessageStatus.PENDING:
        # Settled by another attempt (a lease that ran out) or by an operator: this failure changes nothing.
        return "stale", {}
    wait = retry_wait(number)
    if wait is None:
        return "failed", {"status": MessageStatus.FAILED}
    return "retry", {"next_attempt_at": now + timedelta(seconds=wait)}


def _disable(endpoint_id: UUID, now: datetime) -> None:
    """A receiver's 410 Gone: the endpoint stops receiving and its pending messages fail (DESIGN §14)."""
    reason = f"the receiver answered 410 Gone at {digests.rfc3339(now)}"
    endpoint = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint_id).first()
    if endpoint is not None and endpoint.active:
        WebhookEndpoint.objects.filter(pk=endpoint_id).update(active=False, disabled_reason=reason)
        log.warning("webhook %s disabled: %s", endpoint_id, reason, extra={"endpoint_id": str(endpoint_id)})
    WebhookMessage.objects.filter(endpoint_id=endpoint_id, status=MessageStatus.PENDING).update(
        status=MessageStatus.FAILED
    )


def _next_of_run(outgoing: Outgoing) -> UUID | None:
    """The run's next pending message to this endpoint, now free to go."""
    if outgoing.run_id is None:
        return None
    return (
        WebhookMessage.objects.filter(
            endpoint_id=outgoing.endpoint_id, run_id=outgoing.run_id, status=MessageStatus.PENDING
        )
        .order_by("event_id")
        .values_list("id", flat=True)
        .first()
    )


def _retry_soon(message_id: UUID, wait: float) -> None:
    if wait <= COUNTDOWN_LIMIT:
        # A little late rather than early: a task that arrives before the message is due finds nothing to do.
        outbox.enqueue_delivery([message_id], countdown=wait + 0.05)


def deliver(message_id: UUID | str | None = None) -> str | None:
    """Claim, send, record one message (or the one due longest); None when there was nothing to claim."""
    outgoing = claim(message_id)
    if outgoing is None:
        return None
    return record(outgoing, send(outgoing))


def deliver_in_order(
    message_id: UUID | str, *, limit: int = CHAIN_LIMIT, max_seconds: float = CHAIN_SECONDS
) -> list[str]:
    """Deliver `message_id`, then each next message of its run its settling frees, in this call; their outcomes.

    What the delivery task runs. Each message is claimed as `deliver` claims
    it (due, free, none earlier of its run pending): one that is not (taken by
    another worker, leased, waiting a retry) ends the chain there, its own
    task, countdown or the beat has it. Past `limit` messages or `max_seconds`
    the next one is enqueued instead, as `record` does.
    """
    began = time.monotonic()
    results: list[str] = []
    following: UUID | str | None = message_id
    while following is not None:
        if results and (len(results) >= limit or time.monotonic() - began >= max_seconds):
            outbox.enqueue_delivery([following])
            break
        outgoing = claim(following)
        if outgoing is None:
            break
        result, following = settle(outgoing, send(outgoing))
        results.append(result)
    return results


def deliver_due(*, max_seconds: float) -> int:
    """The beat's pass: deliver due messages one by one until none is left or `max_seconds` passed."""
    began, count = time.monotonic(), 0
    while time.monotonic() - began < max_seconds:
        if deliver() is None:
            break
        count += 1
    return count


def has_due() -> bool:
    """Whether any message is due now (one probe of message_due)."""
    return due(db_now()).exists()
