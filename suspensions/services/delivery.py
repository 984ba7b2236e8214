"""Webhook delivery (docs/api.md, "Retries and guarantees"): an endpoint's due messages claimed, sent over one
connection and recorded together.

A delivery task serves ONE endpoint (`deliver_endpoint`), in rounds:

- claim: one statement (sql/push.py's CLAIM_OF_ENDPOINT), its own short
  transaction, locks up to BATCH due messages of the endpoint `FOR UPDATE
  SKIP LOCKED OF message` (a message another worker holds is theirs), only
  the first pending message of each run (per-run order), leases them
  (WEBHOOK_LEASE_SECONDS ahead) and counts their attempt (an attempt row
  `in flight`), and commits before anything is sent;
- send: the batch's POSTs one after the other over one kept-alive connection
  (outbound.Sender: the resolved address checked, no redirects), with no
  lock held and no transaction open; a batch that takes a third of its
  lease has its lease extended (a live worker keeps what it is sending);
- record: one statement (RECORD) writes every attempt's answer and settles
  every message (delivered, retried later, failed), in one transaction.

Settling a message frees its run's next one, which the next round claims;
the task goes on until nothing of its endpoint is due, or for
ENDPOINT_SECONDS, then hands the endpoint to a new task (other endpoints'
tasks get their turn). An endpoint that gives no answer (refused address,
connection error, timeout) or a 410 ends the batch: its unsent messages get
their claim's attempt taken back and wait with the one that failed.

A worker that dies mid-batch leaves its messages leased: the lease runs out
within WEBHOOK_LEASE_SECONDS, the beat's pass hands the endpoint to a task
timed for that moment (tasks.webhook_sweep, `due_endpoints`), and the
messages are sent again (at least once: receivers dedupe on `webhook-id`).
Their attempt is counted already; the next claim marks it `worker lost`.

Retries: each failed attempt n waits WEBHOOK_RETRY_SCHEDULE[n-1] (±20%
jitter); past the schedule the message is `failed`. A wait up to
COUNTDOWN_LIMIT is a Celery countdown on the endpoint's task; the beat's
pass is the net under it and the only path for longer ones. `attempts`
counts every attempt of the message, redeliveries included.
"""

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Min
from django.db.models.functions import Now

from .. import digests, keys, outbound
from ..clock import db_now
from ..models import MessageStatus, WebhookEndpoint, WebhookFormat, WebhookMessage
from ..observability import metrics, tracing
from . import outbox
from .retries import COUNTDOWN_LIMIT, retry_wait
from .sql import push

log = logging.getLogger(__name__)

GONE = 410
# Messages of one endpoint claimed, sent and recorded together; at most one of each run.
BATCH = 50
# A task delivers one endpoint's rounds for about this long, then hands the endpoint to a new task.
ENDPOINT_SECONDS = 5.0
# An attempt's error until its outcome is recorded, and once a later claim found it never was.
IN_FLIGHT = "in flight: no outcome recorded yet"
WORKER_LOST = "worker lost: its worker stopped before recording an outcome (it may have reached the receiver)"


@dataclass(frozen=True)
class Outgoing:
    """A claimed message: its attempt `number` (counted by the claim) and what sending it needs."""

    id: UUID
    endpoint_id: UUID
    run_id: UUID | None
    body: str
    number: int
    claimed_at: datetime
    # The W3C traceparent of the transition that announced it ('' with traces off; docs/deploy.md, "Traces").
    traceparent: str = ""


@dataclass(frozen=True)
class Batch:
    """Messages of one endpoint claimed by one statement, in event order, with the endpoint's URL and secrets."""

    endpoint_id: UUID
    url: str
    format: str
    secrets: tuple[str, ...]
    messages: tuple[Outgoing, ...]
    # What an A2A subscription's client asked to be sent (its token, its authentication), beside the signature.
    extra_headers: tuple[tuple[str, str], ...] = ()


def claim(
    *, endpoint_id: UUID | str | None = None, message_id: UUID | str | None = None, limit: int = BATCH
) -> Batch | None:
    """Claim up to `limit` due, free messages of `endpoint_id` (or the one message `message_id`); None if none.

    One statement, its own short transaction (see the module docstring).
    """
    params: dict[str, Any] = {
        "pending": MessageStatus.PENDING.value,
        "not_pending": push.NOT_PENDING,
        "lease": float(settings.WEBHOOK_LEASE_SECONDS),
        "limit": limit,
        "in_flight": IN_FLIGHT,
        "lost": WORKER_LOST,
    }
    if message_id is not None:
        params["id"] = UUID(str(message_id))
    else:
        params["endpoint"] = UUID(str(endpoint_id))
    with connection.cursor() as cursor:
        cursor.execute(push.CLAIM_MESSAGE if message_id is not None else push.CLAIM_OF_ENDPOINT, params)
        rows = cursor.fetchall()
    if not rows:
        return None
    _, endpoint, _, _, _, url, format_, secret, previous, rotated, now, _, extra = rows[0]
    secrets = [keys.unseal(secret)]  # raw SQL reads the columns sealed (suspensions/keys.py)
    if previous and rotated is not None and rotated > now:
        secrets.append(keys.unseal(previous))
    messages = tuple(Outgoing(r[0], r[1], r[2], r[3], r[4], r[10], r[11]) for r in rows)
    headers = tuple(json.loads(keys.unseal(extra)).items()) if extra else ()
    return Batch(endpoint, url, format_, tuple(secrets), messages, headers)


def send(batch: Batch) -> list[outbound.Outcome | None]:
    """POST the batch's messages in order over one connection; None for each left unsent. Outside any transaction.

    The batch stops at an attempt that got no answer or a 410: the endpoint
    is unreachable or gone, and its other messages are not tried now.
    """
    assert not transaction.get_connection().in_atomic_block, "no network I/O inside a transaction (STYLE 17)"
    outcomes: list[outbound.Outcome | None] = []
    leased = time.monotonic()
    with outbound.Sender(batch.url) as sender:
        for message in batch.messages:
            if time.monotonic() - leased > settings.WEBHOOK_LEASE_SECONDS / 3:
                # The whole batch: the messages sent already are not settled before the batch is recorded.
                extend_lease(batch.messages)
                leased = time.monotonic()
            said = _span_attributes(batch, message) if tracing.enabled() else {}
            with tracing.webhook_post(message.traceparent, said) as carried:
                # The traceparent is not signed: standardwebhooks signs the id, the timestamp and the body.
                outcome = sender.post(message.body, _headers(batch, message) | carried)
                tracing.answered(outcome.status_code, outcome.error)
            outcomes.append(outcome)
            if outcome.status_code is None or outcome.status_code == GONE:
                break
    return outcomes + [None] * (len(batch.messages) - len(outcomes))


def _span_attributes(batch: Batch, message: Outgoing) -> dict[str, Any]:
    """What a webhook POST's span says: the message, its endpoint (never its URL: it may carry a token), its run."""
    return {
        "suspensions.message_id": str(message.id),
        "suspensions.endpoint_id": str(batch.endpoint_id),
        tracing.RUN: str(message.run_id or ""),
        "suspensions.attempt": message.number,
        "http.request.method": "POST",
    }


def _headers(batch: Batch, message: Outgoing) -> dict[str, str]:
    if batch.format == WebhookFormat.SLACK:
        return {}
    signed = outbound.signature_headers(str(message.id), message.body, batch.secrets, message.claimed_at)
    return signed | dict(batch.extra_headers)


def extend_lease(messages: tuple[Outgoing, ...]) -> None:
    """A live worker keeps what it holds, sent or still to send: the lease of `messages` runs from now again."""
    lease = timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS)
    ids = [m.id for m in messages]
    WebhookMessage.objects.filter(pk__in=ids, status=MessageStatus.PENDING).update(next_attempt_at=Now() + lease)


def record(batch: Batch, outcomes: list[outbound.Outcome | None]) -> list[str]:
    """Write the sent attempts and settle the batch (one statement); the metric outcome of each sent message.

    On a 410 the endpoint is then disabled and its pending messages fail. A
    retry due within COUNTDOWN_LIMIT gets the endpoint's task as a countdown.
    """
    verdicts = _verdicts(batch, outcomes)
    rows = [(m, o, verdict, wait) for m, o, (verdict, wait) in zip(batch.messages, outcomes, verdicts, strict=True)]
    with connection.cursor() as cursor:
        cursor.execute(push.RECORD, _record_params(rows))
        settled = {row[0] for row in cursor.fetchall()}
    results = []
    for message, outcome, verdict, _ in rows:
        if outcome is None:
            continue
        result = verdict if verdict == "delivered" or message.id in settled else "stale"
        results.append(result)
        _log(batch, message, outcome, result)
    if "gone" in results:
        _disable(batch.endpoint_id)
    waits = [wait for _, _, verdict, wait in rows if verdict == "retry" and wait <= COUNTDOWN_LIMIT]
    if waits and "gone" not in results:
        # A little late rather than early: a task that arrives before the message is due finds nothing to do.
        outbox.enqueue_delivery([batch.endpoint_id], countdown=min(waits) + 0.05)
    return results


def _verdicts(batch: Batch, outcomes: list[outbound.Outcome | None]) -> list[tuple[str, float]]:
    """(outcome, seconds to wait) of each message; the unsent wait with the attempt that ended the batch."""
    verdicts, last_wait = [], 0.0
    for message, outcome in zip(batch.messages, outcomes, strict=True):
        wait = None if outcome is None or outcome.delivered else retry_wait(message.number)
        if outcome is None:
            verdicts.append(("unsent", last_wait))
        elif outcome.delivered:
            verdicts.append(("delivered", 0.0))
        elif outcome.status_code == GONE:
            verdicts.append(("gone", 0.0))
        elif wait is None:
            verdicts.append(("failed", 0.0))
        else:
            last_wait = wait
            verdicts.append(("retry", wait))
    return verdicts


def _record_params(rows: list[tuple[Outgoing, outbound.Outcome | None, str, float]]) -> dict[str, Any]:
    return {
        "ids": [m.id for m, _, _, _ in rows],
        "numbers": [m.number for m, _, _, _ in rows],
        "codes": [o.status_code if o else None for _, o, _, _ in rows],
        "errors": [o.error if o else "" for _, o, _, _ in rows],
        "durations": [o.duration_ms if o else 0 for _, o, _, _ in rows],
        "outcomes": [verdict for _, _, verdict, _ in rows],
        "waits": [wait for _, _, _, wait in rows],
        "pending": MessageStatus.PENDING.value,
        "delivered": MessageStatus.DELIVERED.value,
        "failed": MessageStatus.FAILED.value,
    }


def _log(batch: Batch, message: Outgoing, outcome: outbound.Outcome, result: str) -> None:
    metrics.webhook_delivery(result)
    if not log.isEnabledFor(logging.INFO):
        return
    # The endpoint's id, never its URL: a receiver's URL may carry its token.
    line: dict[str, Any] = {"message_id": str(message.id), "endpoint_id": str(batch.endpoint_id), "outcome": result}
    line |= {"status_code": outcome.status_code, "error": outcome.error, "duration_ms": outcome.duration_ms}
    log.info("webhook attempt %s: %s", message.id, result, extra=line)


def _disable(endpoint_id: UUID) -> None:
    """A receiver's 410 Gone: the endpoint stops receiving and its pending messages fail
    (docs/api.md, "Retries and guarantees").

    One short transaction: the endpoint row is locked first, then its messages.
    """
    with transaction.atomic():
        reason = f"the receiver answered 410 Gone at {digests.rfc3339(db_now())}"
        endpoint = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint_id).first()
        if endpoint is not None and endpoint.active:
            WebhookEndpoint.objects.filter(pk=endpoint_id).update(active=False, disabled_reason=reason)
            log.warning("webhook %s disabled: %s", endpoint_id, reason, extra={"endpoint_id": str(endpoint_id)})
        WebhookMessage.objects.filter(endpoint_id=endpoint_id, status=MessageStatus.PENDING).update(
            status=MessageStatus.FAILED
        )


def deliver_batch(batch: Batch) -> tuple[list[str], bool]:
    """Send and record a claimed batch: (the outcomes, whether every message of it was sent)."""
    outcomes = send(batch)
    return record(batch, outcomes), None not in outcomes


def deliver(message_id: UUID | str) -> str | None:
    """Claim, send, record the one message `message_id` if it is due and free; None when it was not claimed."""
    batch = claim(message_id=message_id)
    if batch is None:
        return None
    results, _ = deliver_batch(batch)
    return results[0]


def deliver_endpoint(endpoint_id: UUID | str, *, max_seconds: float = ENDPOINT_SECONDS) -> list[str]:
    """What a delivery task runs: rounds of claim, send, record for one endpoint; the outcomes, in order.

    Ends when nothing of the endpoint is due and free, when a batch stopped
    short (the endpoint gave no answer, or 410), or after `max_seconds`, when
    the endpoint is handed to a new task.
    """
    outbox.delivery_started(endpoint_id)
    began, results = time.monotonic(), []
    while (batch := claim(endpoint_id=endpoint_id)) is not None:
        sent, whole = deliver_batch(batch)
        results += sent
        if not whole:
            break
        if time.monotonic() - began >= max_seconds:
            outbox.enqueue_delivery([endpoint_id])
            break
    return results


def due_endpoints(within: float = 0.0) -> list[tuple[UUID, float]]:
    """Active endpoints with a pending message due within `within` seconds: (id, seconds until the first is due).

    A leased message counts: its lease's end is when it is due again (one
    aggregate over the message_due index).
    """
    now = db_now()
    rows = (
        WebhookMessage.objects.filter(
            status=MessageStatus.PENDING, next_attempt_at__lte=now + timedelta(seconds=within), endpoint__active=True
        )
        .values("endpoint_id")
        .annotate(first=Min("next_attempt_at"))
    )
    return [(row["endpoint_id"], max(0.0, (row["first"] - now).total_seconds())) for row in rows]


def deliver_due(*, max_seconds: float) -> int:
    """Deliver every endpoint's due messages in this process, until none is left or `max_seconds` passed."""
    began, count = time.monotonic(), 0
    for endpoint_id, _ in due_endpoints():
        left = max_seconds - (time.monotonic() - began)
        if left <= 0:
            break
        count += len(deliver_endpoint(endpoint_id, max_seconds=left))
    return count
