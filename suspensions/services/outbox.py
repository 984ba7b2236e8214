"""The outbox (docs/api.md, "8. Push: webhooks"; STYLE rule 17): announced events, written with the transition, fanned
out after it.

Writing: `claims.write_events` hands every Event it saves to `write`, which
turns the announced ones into OutboxEvent rows and inserts them with one
statement in the transition's transaction (the sweep inserts its own with
set-based SQL, see services.sweep). A rolled-back transition leaves no row;
a committed one cannot lose its row. On commit the new ids wake the fan-out:
the ids a process commits within a few milliseconds go in one task
(services.wakeups); if that wake-up is lost, the beat finds the row undispatched.

Fan-out (`fan_out`): locks undispatched rows `FOR UPDATE SKIP LOCKED` (the
last step of the lock order in services.claims), writes one WebhookMessage
per active endpoint whose scope covers the event's and whose types want it,
writes the approver emails and Slack messages the events ask for
(services.notifications: notifications are deliveries too), marks the rows
dispatched, commits; then enqueues one delivery task per endpoint that got
messages (services.delivery sends an endpoint's due messages in batches, a
run's in order). No network I/O under the lock; the beat's pass is the net.

Event data carries ids, scope, state, revision, reasons, digests, tool names
and the deadline; never a continuation, an admitted input or a secret.
"""

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from .. import presenters, scopes
from ..models import Event, OutboxEvent, WebhookEndpoint, WebhookFormat
from ..models import WebhookMessage as Message
from ..observability import tracing
from . import a2a_notices, announce, fan_out_steps, notifications, wakeups
from .sql.rows import Writes

log = logging.getLogger(__name__)

# Tasks are enqueued by name: services never import the tasks module (it imports them).
FAN_OUT_TASK = "suspensions.tasks.fan_out_outbox"
DELIVER_TASK = "suspensions.tasks.deliver_endpoint"
# An event held back behind an earlier event of its run (being fanned out elsewhere) is tried again this soon.
DEFERRED_COUNTDOWN = 1.0
BATCH = 200
# The scope of an event about the whole service, not a run: it goes to every workspace-level endpoint. Only
# the `audit.checkpoint` rows written before there was one checkpoint chain per workspace have it; a checkpoint
# is now stamped with its workspace's scope and goes to that workspace's endpoints only (docs/auditors.md).
SYSTEM = ""

# -- writing, in the transition's transaction ------------------------------------------------


def write(writes: Writes, rows: Sequence[Event], extra: Mapping[str, Any]) -> list[OutboxEvent]:
    """Insert the outbox rows the saved `rows` announce, in ONE statement, and enqueue their fan-out on commit.

    Call inside the transition's transaction, after the events are saved.
    Writes nothing (no statement) when no row is announced.
    """
    built = []
    carried = tracing.traceparent()  # '' with traces off: the messages are then sent in the delivery task's trace
    for row in rows:
        for type_, data in announce.announced(row, extra):
            event = OutboxEvent(run_id=row.run_id, type=type_, data=data, created_at=row.at, traceparent=carried)
            event.stamp_scope(row.scope)
            built.append(event)
    if built:
        writes.insert(built)
        enqueue_fan_out_of(built)
    return built


def enqueue_fan_out(ids: list[int] | None, countdown: float | None = None) -> None:
    """On commit, one fan-out task for `ids` (None: whatever is undispatched). A lost enqueue is the beat's."""
    _enqueue_on_commit(lambda: ids, countdown)


def enqueue_fan_out_of(rows: Sequence[OutboxEvent]) -> None:
    """On commit, wake the fan-out for these new rows.

    Their ids join those this process commits within `FAN_OUT_WINDOW_MS`, sent as one task (services.wakeups).
    """
    transaction.on_commit(lambda: WAKEUPS.add([e.id for e in rows]), robust=True)


def _wake_fan_out(ids: list[int]) -> None:
    current_app.send_task(FAN_OUT_TASK, args=[ids], countdown=None)


WAKEUPS = wakeups.Coalescer(_wake_fan_out, lambda: settings.FAN_OUT_WINDOW_MS / 1000, chunk=BATCH)


def _enqueue_on_commit(ids: Callable[[], list[int] | None], countdown: float | None) -> None:
    def send() -> None:
        current_app.send_task(FAN_OUT_TASK, args=[ids()], countdown=countdown)

    # robust: a broker that is down must not turn a committed transition into an error.
    transaction.on_commit(send, robust=True)


def enqueue_delivery(endpoint_ids: Iterable[Any], countdown: float | None = None) -> None:
    """On commit, a delivery task per endpoint unless one is queued already: it sends what of it is due.

    No `expires`: a task queued behind a backlog still runs, and finds nothing
    to do when another task sent its messages meanwhile. A task of the
    endpoint that is queued and not started yet claims every message
    committed before it starts, so a second one would only cost a task
    (about 4 ms of a worker's CPU, docs/performance.md): the cache remembers
    the queued one (`delivery_started` forgets it) for QUEUED_SECONDS at most.
    This is no guard: a lost or stale note costs a task, or leaves the
    messages to the beat's pass; a countdown (a retry) is always sent.
    """
    ids = sorted({str(i) for i in endpoint_ids})

    def send() -> None:
        for endpoint_id in ids:
            if countdown is None and not _note_queued(endpoint_id):
                continue
            current_app.send_task(DELIVER_TASK, args=[endpoint_id], countdown=countdown)

    if ids:
        transaction.on_commit(send, robust=True)


QUEUED_KEY = "suspensions:delivery-queued:{}"
QUEUED_SECONDS = 5


def _note_queued(endpoint_id: str) -> bool:
    """Note a delivery task of the endpoint as queued; False when one already is (and has not started)."""
    try:
        return bool(cache.add(QUEUED_KEY.format(endpoint_id), 1, QUEUED_SECONDS))
    except Exception:  # noqa: BLE001 - a cache that is down costs a task more, never a message
        log.exception("the delivery-queued note failed: enqueuing the task anyway")
        return True


def delivery_started(endpoint_id: Any) -> None:
    """A delivery task of the endpoint starts: the next commit enqueues a new one. Call before its first claim."""
    try:
        cache.delete(QUEUED_KEY.format(endpoint_id))
    except Exception:  # noqa: BLE001 - the note then expires on its own (QUEUED_SECONDS)
        log.exception("the delivery-queued note was not cleared")


# -- fan-out, in its own transaction -----------------------------------------------------------


@dataclass
class FanOut:
    dispatched: list[OutboxEvent] = field(default_factory=list)
    messages: int = 0
    deferred: list[int] = field(default_factory=list)


def fan_out(*, ids: Sequence[int] | None = None, older_than: timedelta | None = None, limit: int = BATCH) -> FanOut:
    """Fan out up to `limit` undispatched events (`ids`, or the oldest); see the module docstring.

    Locks the events FOR UPDATE SKIP LOCKED: an event another fan-out holds
    is theirs. An event whose run has an earlier undispatched event this call
    does not hold is deferred (enqueued again shortly): the messages of a run
    are created in event order, which the per-run delivery order relies on.
    Its three steps (hold, endpoints, dispatch) are in `fan_out_steps`.
    """
    with transaction.atomic():
        now, ready, deferred = fan_out_steps.hold(ids, older_than, limit)
        if now is None:
            return FanOut()
        messages = _messages(ready, now) if ready else []
        if ready:
            fan_out_steps.dispatch(messages, ready, now)
            notifications.write_for_events(ready, now)
        enqueue_delivery(m.endpoint_id for m in messages)
        if deferred:
            enqueue_fan_out(deferred, countdown=DEFERRED_COUNTDOWN)
    return FanOut(dispatched=ready, messages=len(messages), deferred=deferred)


def fan_out_lost(*, older_than: timedelta, max_seconds: float | None = None) -> int:
    """The beat's pass: fan out every event still undispatched `older_than` after it was written.

    With `max_seconds`, it stops after the batch that passes it: the rest is
    the next pass's. Unbounded, a pass that fans out slower than events
    arrive never returns, and two of them held both processes of the soak's
    worker, the expiry sweep's too (docs/benchmarks.md, "Soak").
    """
    began, total = time.monotonic(), 0
    while True:
        result = fan_out(older_than=older_than)
        total += len(result.dispatched)
        # A batch held back whole waits for the fan-out that holds its runs' earlier events: stop, not spin.
        if not result.dispatched or len(result.dispatched) + len(result.deferred) < BATCH:
            return total
        if max_seconds is not None and time.monotonic() - began >= max_seconds:
            return total


def _messages(events: list[OutboxEvent], now: datetime) -> list[Message]:
    """One message per (event, active endpoint covering its scope and wanting its type)."""
    covering = {e.id: [p for p in scopes.levels(e.scope).values() if p] for e in events}
    wanted = {p for prefixes in covering.values() for p in prefixes}
    everywhere = any(e.scope == SYSTEM for e in events)
    if not wanted and not everywhere:
        return []
    runs = {e.run_id for e in events if e.run_id is not None}
    endpoints = fan_out_steps.endpoints(wanted, runs, top_level=everywhere)
    tasks = a2a_notices.statuses(e for e in endpoints if e.format == WebhookFormat.A2A)
    messages = []
    for event in events:
        for endpoint in endpoints:
            if not _covers(endpoint, event, covering[event.id]):
                continue
            if endpoint.event_types and event.type not in endpoint.event_types:
                continue
            body = _body(event, endpoint, tasks)
            if body is None:
                continue
            message = Message(
                endpoint=endpoint,
                event_id=event.id,
                run_id=event.run_id,
                type=event.type,
                body=body,
                next_attempt_at=now,
                created_at=now,
                traceparent=event.traceparent,
            )
            message.stamp_scope(endpoint.scope)
            messages.append(message)
    return messages


def _body(event: OutboxEvent, endpoint: WebhookEndpoint, tasks: dict[str, str]) -> str | None:
    """The message's body; an A2A subscription's is its task's status update, None when its state is unchanged."""
    if endpoint.format != WebhookFormat.A2A:
        return presenters.webhook_body(event, endpoint.format)
    return a2a_notices.notice(event, endpoint, tasks.get(str(endpoint.task_id), ""))


def _covers(endpoint: WebhookEndpoint, event: OutboxEvent, prefixes: list[str]) -> bool:
    """An endpoint gets its scope's events and those below; an event of the whole service, every workspace's;
    an endpoint bound to one run (an A2A subscription), that run's only."""
    if endpoint.run_id is not None and endpoint.run_id != event.run_id:
        return False
    if event.scope == SYSTEM:
        return "/" not in endpoint.scope
    return endpoint.scope in prefixes
