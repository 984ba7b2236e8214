"""What every transition shares: the run lock, the fenced move, the event writer
(docs/exactly-once.md, "3. `through`: the five steps, in one transaction"; docs/decisions.md, "The plain core").

Lock contract (STYLE rules 3, 4 and 16), written once here for every service:

1. the run row first: `SELECT ... FOR NO KEY UPDATE OF run`, with its live
   pause joined and the database clock read in the same statement
   (`lock_run`);
2. then the pause (read with the run: it is only written or deleted under
   the run's lock, so the run lock covers it);
3. then admissions and starts of that run;
4. then flow waits, approval votes and outbox rows, in that order.

`SKIP LOCKED` batches (the sweep) take the same order. Nothing is written
before the last refusal, so a refusal leaves no trace, and each change writes
its Event in its own transaction. No network I/O happens under these locks.
The one sequence every door follows on these parts is in claiming.py.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings

from .. import digests
from ..exceptions import (
    Forbidden,
    InputTooLarge,
    InvalidRequest,
    NotFound,
    SuspensionExpired,
    VersionConflict,
    VersionDrift,
)
from ..models import Admission, Approval, ApprovalStatus, Event, Run, RunState, Start, Suspension
from ..observability import logs, metrics, tracing
from ..principals import Principal
from . import outbox
from .sql.rows import Writes, select_locked_run

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
    # its receipt is fresh only in the answer to the call that created it (docs/api.md, "1. Words").
    admission_fresh: bool | None = None


@dataclass(frozen=True)
class Locked:
    """A run locked for one transition: the run, its live pause (or None), the database clock, and the
    transition's writes, sent in one round trip when the door's `write` returns (sql.rows.Writes).

    Frozen: a step hands the next one what it found as a value, never through here.
    """

    principal: Principal
    run: Run
    live: Suspension | None
    now: datetime
    writes: Writes = field(default_factory=Writes)


def lock_run(principal: Principal, run_id: UUID | str | None, *, admission_id: UUID | str | None = None) -> Locked:
    """Lock one visible run (404 otherwise); its live pause and the clock are read in the same statement.

    With `admission_id` instead of `run_id`: the run of that admission, found in the same statement.
    """
    held = None if principal.superuser else principal.scopes_with()
    found = select_locked_run(run_id, held, admission_id=admission_id) if held != [] else None  # no grants
    if found is None:
        raise NotFound(f"admission {admission_id} not found" if admission_id else f"run {run_id} not found")
    run, live, now = found
    if live is None and run.state == RunState.PAUSED:
        # We waited for the lock while another transaction paused the run: PostgreSQL hands us the run
        # as that transaction left it, but the joined pause as the statement's snapshot saw it (none).
        # A paused run always has its pause, so it is read again, now committed. Only a door that can
        # race a pause meets this (an early result,
        # docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"): no one else knows a pause before
        # it exists.
        live = Suspension.objects.filter(run_id=run.id).first()
        run._state.fields_cache["suspension"] = live
    return Locked(principal=principal, run=run, live=live, now=now)


def require(principal: Principal, role: str, scope: str) -> None:
    if not principal.can(role, scope):
        raise Forbidden(f"the '{role}' role is required in scope '{scope}'")


def check_revision(run: Run, revision: int) -> None:
    """The revision the caller holds must be the run's (version_conflict: a fenced worker learns it is stale)."""
    if run.revision != revision:
        raise VersionConflict(f"run {run.id} is at revision {run.revision}, not {revision}")


def check_swept(run: Run, *, revision: int, suspension_id: UUID | str | None = None) -> None:
    """410 when the sweep expired the pause the caller held, as `check_deadline` answered before it ran.

    The caller held `revision` (and, for a claim, the pause `suspension_id`);
    the sweep's `expired` event of an unclaimed pause is at the revision after
    it (docs/api.md §4). Reads only for a run the sweep can have ended.
    """
    if run.state not in (RunState.EXPIRED, RunState.FAILED):
        return
    expiry = Event.objects.filter(run_id=run.id, kind="expired", revision=revision + 1, data__admission_id__isnull=True)
    if suspension_id is not None:
        expiry = expiry.filter(data__suspension_id=str(suspension_id))
    swept = expiry.values_list("data", flat=True).first()
    if swept is not None:
        raise SuspensionExpired(f"pause {swept['suspension_id']} expired at {swept['expires_at']}")


def check_deadline(suspension: Suspension, now: datetime) -> None:
    """Deadline partition: at exactly expires_at the row belongs to the sweeper."""
    if suspension.expires_at is not None and suspension.expires_at <= now:
        raise SuspensionExpired(f"pause {suspension.id} expired at {digests.rfc3339(suspension.expires_at)}")


def drift_of(suspension: Suspension, engine_version: str | None, accept_drift: bool) -> dict[str, Any]:
    """The version-drift guard (docs/api.md, "Version drift: `engine_version` and `accept_drift`") of a resume or start
    of `suspension`: what its events record.

    Nothing when either side gave no version or both are the same; drift is
    `version_drift` (409) naming both, unless the request accepts it, and then
    the event data says so with both versions.
    """
    paused_with = suspension.engine_version
    if not paused_with or engine_version is None or engine_version == paused_with:
        return {}
    if not accept_drift:
        raise VersionDrift(
            f"the pause was stored by engine version {paused_with!r}, not {engine_version!r}; "
            "send accept_drift: true to go on anyway",
            engine_version=engine_version,
            pause_engine_version=paused_with,
        )
    return {"accept_drift": True, "engine_version": engine_version, "pause_engine_version": paused_with}


def advance(t: Locked, state: str, **fields: Any) -> int:
    """The run's move, fenced by the revision read under the lock: one UPDATE; returns the new revision.

    The guard `revision = <the one read>` always holds under the run lock; it
    is there so the fencing token is visible in the one statement that moves it.
    """
    run = t.run
    held, revision = run.revision, run.revision + 1

    def moved(cursor: Any) -> None:
        if cursor.rowcount != 1:  # only a caller that did not hold the run lock can get here
            raise VersionConflict(f"run {run.id} moved past revision {held}")

    values = {"state": state, "revision": revision, "updated_at": t.now, **fields}
    t.writes.update(Run, {"id": run.pk, "revision": held}, moved, **values)
    for name, value in values.items():
        setattr(run, name, value)
    return revision


def acting(principal: Principal) -> dict[str, str]:
    """What an event records of a delegate deciding for someone (docs/identity.md, "Delegation"): `acting_for`."""
    return {"acting_for": principal.acting_for} if principal.acting_for else {}


def event(run: Run, kind: str, actor: str, at: datetime, **data: Any) -> Event:
    """An unsaved Event of `run` at its current revision; `write_events` saves it in the change's transaction."""
    row = Event(run_id=run.id, kind=kind, actor=actor, revision=run.revision, data=data, at=at)
    row.stamp_scope(run.scope)
    row.announce_tags = tags_of(run)
    return row


def tags_of(run: Run) -> tuple[str, ...]:
    """What an event of `run` is tagged with: its locked pause's tags (the run's and its own), else the run's.

    The pause is the one the run lock read with the run (rows.select_locked_run); no query.
    """
    try:
        live = run.suspension if Run.suspension.is_cached(run) else None
    except Suspension.DoesNotExist:  # read, and there was none
        live = None
    return tuple(live.tags if live is not None else run.tags)


def write_events(writes: Writes, *rows: Event, announce: Mapping[str, Any] | None = None) -> None:
    """The one writer of events: one call chaining them all (the audit chain, sql/rows.py), then their outbox rows.

    Each row is also one transition for the metrics and one INFO log line,
    both on commit, so nothing else needs to announce it. `announce` adds
    what an event's own data lacks (see `announce.announced`).
    """
    writes.insert_events(rows)
    for row in rows:
        metrics.transition(row.kind)
        logs.transition(row)
    tracing.transition(rows)
    outbox.write(writes, rows, announce or {})


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


def write_start(*, t: Locked, suspension: Suspension, admission: Admission, actor: str) -> tuple[Start, Event]:
    """T5's writes: the start row, the pause consumed; returns the unsaved `started` event."""
    run = t.run
    start = Start(
        admission_id=admission.id,
        run_id=run.id,
        suspension_id=suspension.id,
        run_revision=run.revision,
        request_digest=admission.request_digest,
        actor=actor,
        started_at=t.now,
    )
    start.digest = digests.start_digest(
        run_id=run.id,
        suspension_id=suspension.id,
        run_revision=run.revision,
        request_digest=admission.request_digest,
        started_at=t.now,
    )
    start.stamp_scope(run.scope)
    t.writes.insert([start])
    # The pause is consumed by the start; the admission and start rows are its evidence.
    t.writes.delete(Suspension, suspension.pk)
    return start, event(run, "started", actor, t.now, suspension_id=str(suspension.id), start_digest=start.digest)


def resolve_approval(t: Locked, suspension: Suspension, status: str, note: str = "", **decided: Any) -> None:
    """Close the pause's approval request, if it has one still pending; `decided`: final_calls or response."""
    pending = {"suspension_id": suspension.id, "status": ApprovalStatus.PENDING}
    decision: dict[str, Any] = {"status": status, "resolved_at": t.now, "decided_by": t.principal.name, "note": note}
    decision["acting_for"] = t.principal.acting_for or ""
    t.writes.update(Approval, pending, None, **decision, **decided)
    tracing.decided(t.live, status, t.principal.name, t.now)
