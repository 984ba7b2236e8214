"""What every state change shares: the run lock, the database clock, the event writer, the move.

Lock contract (STYLE rules 3, 4 and 16), written once here for every service:

1. the run row first: `SELECT ... FOR NO KEY UPDATE OF run`, with its live
   suspension joined and the database clock read in the same statement
   (`lock_run`);
2. then the suspension (already read with the run: it is only deleted or
   written under the run's lock, so the run lock covers it);
3. then admissions and starts of that run;
4. then flow waits, approval votes and outbox rows, in that order.

`SKIP LOCKED` batches (the sweep) take the same order. Nothing is written
before the last refusal, so a refusal leaves no trace, and each change writes
its Event in its own transaction. No network I/O happens under these locks.

The fixed statements themselves (the lock, the move, the inserts) are in
claims_sql.py: SQL built once for PostgreSQL, the ORM elsewhere. A fresh
register, pause, one-shot resume, start or deciding vote is first attempted
as one guarded statement without a transaction (`attempts.attempted`): its
guard takes the run lock first, in the same order, and anything but a fresh
transition is answered under the lock as above. The one claim sequence of
every claiming door (T4) is in claiming.py, on these.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection

from .. import digests
from ..exceptions import Forbidden, InputTooLarge, InvalidRequest, SuspensionExpired
from ..models import Admission, Approval, ApprovalStatus, Event, Run, Start, Suspension
from ..observability import logs, metrics
from ..principals import Principal
from . import claims_sql, outbox
from .claims_sql import ClockTimestamp  # noqa: F401 (re-exported)

FAR_FUTURE = datetime(9999, 12, 31, tzinfo=digests.UTC)


@dataclass(frozen=True)
class Version:
    """The claim version `{run_id, suspension_id, run_revision}` the caller saw."""

    run_id: UUID
    suspension_id: UUID
    run_revision: int

    def as_dict(self) -> dict[str, Any]:
        return digests.version_dict(self.run_id, self.suspension_id, self.run_revision)

    def require_run(self, run_id: UUID | str) -> None:
        """A version presented for one run must name that run (400 otherwise)."""
        if str(self.run_id) != str(run_id):
            raise InvalidRequest(
                "version.run_id must be the run being resumed", errors={"version": {"run_id": ["Mismatch."]}}
            )


@dataclass
class Claimed:
    """What a claim or a start answers: a receipt, whether it is fresh, and (fresh starts only) the pause."""

    run: Run
    admission: Admission | None = None
    start: Start | None = None
    suspension: Suspension | None = None
    fresh: bool = True
    results: list[dict[str, Any]] | None = None
    # False when the admission was made by an earlier call (a start of admitted work):
    # its receipt is fresh only in the answer to the call that created it (DESIGN §2).
    admission_fresh: bool | None = None


def db_now() -> datetime:
    """The database clock, for changes that take no run lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT clock_timestamp()")
            return cursor.fetchone()[0]  # type: ignore[index]
    from django.utils import timezone

    return timezone.now()


def lock_run(principal: Principal, run_id: UUID | str) -> tuple[Run, Suspension | None, datetime]:
    """Lock one visible run (404 otherwise); read its live pause and the clock in the same statement."""
    return claims_sql.lock_run(principal, run_id)


def require(principal: Principal, role: str, scope: str) -> None:
    if not principal.can(role, scope):
        raise Forbidden(f"the '{role}' role is required in scope '{scope}'")


def event(run: Run, kind: str, actor: str, at: datetime, **data: Any) -> Event:
    """An unsaved Event of `run` at its current revision; save it in the change's transaction."""
    row = Event(run_id=run.id, kind=kind, actor=actor, revision=run.revision, data=data, at=at)
    row.stamp_scope(run.scope)
    return row


def write_events(*rows: Event, announce: Mapping[str, Any] | None = None, keys: bool = False) -> None:
    """The one writer of events: one INSERT for one row, one bulk INSERT for several.

    Each row is also one transition for the metrics (counted on commit) and
    one INFO log line, so nothing else needs to announce it. The rows that
    must be pushed (DESIGN §14) get their outbox rows here, in one more
    INSERT, with their fan-out enqueued on commit (services.outbox);
    `announce` adds what an event's own data lacks (see `outbox.announced`).
    The rows' serial keys are read back only with `keys=True` (a closure
    receipt names its event); without, the INSERT can wait in the
    transition's batch (claims_sql.Batch) and the rows' pk stays None on
    PostgreSQL.
    """
    for row in rows:
        metrics.transition(row.kind)
        logs.transition(row)
    claims_sql.insert(rows, keys=keys)
    outbox.write(rows, announce or {})


def move(run: Run, state: str, now: datetime, **fields: Any) -> None:
    """The run's state change: revision + 1 (the fencing token), one UPDATE."""
    run.state = state
    run.revision += 1
    run.updated_at = now
    for name, value in fields.items():
        setattr(run, name, value)
    claims_sql.update_run(run.pk, state=state, revision=run.revision, updated_at=now, **fields)


def bounded_input(value: Any) -> str:
    """Encode `value` (a list or a JSON string) as the retained input; 413 past the bound."""
    try:
        encoded = digests.canonical(value)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc
    if len(encoded) > settings.MAX_INPUT_BYTES:
        raise InputTooLarge(f"the input encodes to {len(encoded)} bytes; the bound is {settings.MAX_INPUT_BYTES}")
    return encoded.decode("utf-8")


def suspension_digest_of(s: Suspension) -> str:
    """The pause's digest from its stored text: `pending` and `continuation` are kept as canonical JSON."""
    return digests.suspension_digest_of_texts(
        id=s.id,
        run_id=s.run_id,
        scope=s.scope,
        reason=s.reason,
        pending=s.pending.encode("utf-8"),
        continuation=s.continuation.encode("utf-8"),
        expires_at=s.expires_at,
    )


def check_deadline(suspension: Suspension, now: datetime) -> None:
    """Deadline partition: at exactly expires_at the row belongs to the sweeper."""
    if suspension.expires_at is not None and suspension.expires_at <= now:
        raise SuspensionExpired(f"pause {suspension.id} expired at {digests.rfc3339(suspension.expires_at)}")


def write_start(
    *, run: Run, admission: Admission, suspension: Suspension, actor: str, now: datetime
) -> tuple[Start, Event]:
    """T5's writes: the start row, the pause consumed; returns the unsaved `started` event."""
    start = Start(
        admission_id=admission.id,
        run_id=run.id,
        suspension_id=suspension.id,
        run_revision=run.revision,
        request_digest=admission.request_digest,
        actor=actor,
        started_at=now,
    )
    start.digest = digests.start_digest(
        run_id=run.id,
        suspension_id=suspension.id,
        run_revision=run.revision,
        request_digest=admission.request_digest,
        started_at=now,
    )
    start.stamp_scope(run.scope)
    claims_sql.insert([start])
    # The pause is consumed by the start; the admission and start rows are its evidence.
    claims_sql.delete_pause(suspension.pk)
    return start, event(run, "started", actor, now, suspension_id=str(suspension.id), start_digest=start.digest)


def resolve_approval(
    suspension_id: UUID, status: str, now: datetime, actor: str = "", note: str = "", **decided: str
) -> None:
    """Close the pause's approval request, if it has one still pending; `decided`: final_calls or response."""
    claims_sql.update(
        Approval,
        {"suspension_id": suspension_id, "status": ApprovalStatus.PENDING},
        status=status,
        resolved_at=now,
        decided_by=actor,
        note=note,
        **decided,
    )
