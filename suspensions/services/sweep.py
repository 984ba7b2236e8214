"""T9: the expiry sweep (docs/exactly-once.md, "6. The other doors, and the sweep"). Batches of due pauses, each batch
one transaction.

Lock contract (STYLE rules 3 and 4): one statement locks the batch's RUN rows
(`FOR NO KEY UPDATE OF run SKIP LOCKED`, in `expires_at` order), exactly the
row a claim locks first, so a claim and a sweep never wait on each other in
opposite orders. Under those locks a fresh statement re-reads the pauses and
their admissions and re-checks `expires_at <= now` and the run's state: a row
another sweeper or a resume changed before we locked it is seen as it is now.
That re-check under the lock is what makes a duplicate sweep (two beats, many
workers) harmless: a row is expired at most once.

Every write of a batch is set-based (services/sql/expiry.py), outbox rows
included, fanned out by a task enqueued on commit. If that batch write
fails, each row is retried alone in its own savepoint; a row that still
fails is logged and stays for the next sweep, and the rest of the batch is
written.

Before the first batch, a pass runs the escalation chains' due steps
(services.escalations, the same lock contract): someone is asked before any
deadline is applied.
"""

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import DatabaseError, transaction

from ..clock import db_now
from ..models import Run
from ..observability import logs, metrics
from . import early, escalations, outbox
from .sql.expiry import ADMITTED, ENDING, ESCALATED, ORPHAN, SWEEPER, Due, due_rows, event_kind, write

log = logging.getLogger(__name__)


@dataclass
class BatchResult:
    locked: int = 0
    expired: int = 0
    escalated: int = 0
    receipts: int = 0
    dropped: int = 0
    skipped: list[UUID] = field(default_factory=list)  # run ids left alone or failed: not offered again this pass
    failed: int = 0
    seconds: float = 0.0


@dataclass
class SweepResult:
    batches: int = 0
    expired: int = 0
    escalated: int = 0
    receipts: int = 0
    dropped: int = 0
    failed: int = 0
    left_alone: int = 0
    longest_batch_seconds: float = 0.0
    early_results_dropped: int = 0
    # Escalation chains' steps run in this pass (services.escalations), before any deadline is applied.
    escalation_steps: int = 0

    def add(self, batch: BatchResult) -> None:
        self.batches += 1
        self.expired += batch.expired
        self.escalated += batch.escalated
        self.receipts += batch.receipts
        self.dropped += batch.dropped
        self.failed += batch.failed
        self.left_alone += len(batch.skipped) - batch.failed
        self.longest_batch_seconds = max(self.longest_batch_seconds, batch.seconds)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# -- one batch ----------------------------------------------------------------------


def _lock_due_runs(now: datetime, limit: int, exclude: Iterable[UUID]) -> dict[UUID, tuple[str, int, str]]:
    """Lock up to `limit` runs whose pause is due, oldest deadline first; rows locked elsewhere are skipped.

    The order is the deadline, not the pk: SKIP LOCKED never waits, so two
    sweepers cannot deadlock whatever order they lock in.
    """
    rows = (
        Run.objects.filter(suspension__expires_at__lte=now)
        .exclude(pk__in=list(exclude))
        .order_by("suspension__expires_at")
        .select_for_update(skip_locked=True, no_key=True, of=("self",))
        .values_list("id", "state", "revision", "scope")[:limit]
    )
    return {run_id: (state, revision, scope) for run_id, state, revision, scope in rows}


def _write_or_split(rows: list[Due], now: datetime) -> tuple[list[Due], list[Due]]:
    """Write the batch; if it fails, write its rows one by one. Returns (written, failed)."""
    try:
        with transaction.atomic():
            write(rows, now)
        return rows, []
    except DatabaseError:
        log.warning("sweep batch of %d rows failed; retrying row by row", len(rows), exc_info=True)
    written: list[Due] = []
    failed: list[Due] = []
    for row in rows:
        try:
            with transaction.atomic():
                write([row], now)
            written.append(row)
        except DatabaseError:
            # Left as it was: still due, so the next sweep tries it again.
            log.exception("sweep could not expire pause %s of run %s", row.suspension_id, row.run_id)
            failed.append(row)
    return written, failed


def _announce(written: list[Due]) -> None:
    """The batch's transitions for the metrics (on commit) and the logs, one line a row, as write_events does."""
    for kind, n in Counter(event_kind(r) for r in written).items():
        metrics.transition(kind, n)
    for r in written:
        logs.transition(
            logs.Transition(
                kind=event_kind(r),
                run_id=r.run_id,
                revision=r.revision + (r.kind in ENDING),
                actor=SWEEPER,
                scope=r.scope,
            )
        )


def expire_batch(*, limit: int, now: datetime | None = None, exclude: Iterable[UUID] = ()) -> BatchResult:
    """T9 expire one batch: up to `limit` due pauses across all scopes, one transaction.

    Locks the runs with SKIP LOCKED (rows a claim or another sweeper holds are
    left to them). `now` defaults to the database clock, read once for the
    batch. A row already handled by someone else is not touched again.
    """
    began = time.monotonic()
    with transaction.atomic():
        now = now or db_now()
        runs = _lock_due_runs(now, limit, exclude)
        due, left = due_rows(runs, now) if runs else ([], [])
        written, failed = _write_or_split(due, now) if due else ([], [])
        _announce(written)
        if any(r.kind != ORPHAN for r in written):
            # The batch's outbox ids are not read back: the task fans out whatever is undispatched.
            outbox.enqueue_fan_out(None)
    result = BatchResult(locked=len(runs), skipped=left + [r.run_id for r in failed], failed=len(failed))
    result.expired = sum(1 for r in written if r.kind in ENDING)
    result.escalated = sum(1 for r in written if r.kind == ESCALATED)
    result.receipts = sum(1 for r in written if r.kind == ADMITTED)
    result.dropped = sum(1 for r in written if r.kind == ORPHAN)
    result.seconds = time.monotonic() - began
    return result


def expire_suspensions(
    *,
    batch_size: int | None = None,
    now: datetime | None = None,
    max_seconds: float | None = None,
    on_batch: Callable[[BatchResult, SweepResult], None] | None = None,
) -> SweepResult:
    """T9 expire: sweep due pauses batch after batch until none is left (or `max_seconds` passed).

    Each batch is its own transaction (`expire_batch`), so a sweep that dies
    loses at most its current batch, which rolls back whole and stays due.
    A pass stops at the first batch that locks fewer rows than it asked for:
    the backlog is empty, or the rest is locked by a claim or another sweeper.
    Safe to run twice at once: the second finds nothing left to expire.
    """
    size = batch_size or settings.SWEEP_BATCH_SIZE
    # Early results past their ttl go first, in one statement
    # (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"): nothing waits on them.
    total = SweepResult(early_results_dropped=early.drop_expired(now or db_now()))
    # Then the escalation chains' due steps (docs/policies.md, "Escalation chains"): each asks before the deadline.
    total.escalation_steps = escalations.run_due_steps(batch_size=size, now=now)
    # Rows left alone or failed in this pass are not offered again, so they cannot stall it.
    skipped: set[UUID] = set()
    began = time.monotonic()
    while True:
        batch = expire_batch(limit=size, now=now, exclude=skipped)
        skipped.update(batch.skipped)
        total.add(batch)
        if on_batch is not None:
            on_batch(batch, total)
        if batch.locked < size or (max_seconds is not None and time.monotonic() - began >= max_seconds):
            return total
