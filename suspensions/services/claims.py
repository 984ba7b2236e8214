"""What every state change shares: the run lock, the database clock, the event writer, and the claim.

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
as one guarded statement without a transaction (`claims_sql.attempted`): its
guard takes the run lock first, in the same order, and anything but a fresh
transition is answered under the lock as above.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection

from .. import digests
from ..exceptions import (
    AdmissionConflict,
    AgentReplyOnly,
    Forbidden,
    InputTooLarge,
    InvalidRequest,
    NotAnAgentReply,
    NotAnApproval,
    NotSuspended,
    RequiresApproval,
    SuspensionExpired,
    VersionConflict,
    WrongGate,
)
from ..models import (
    Admission,
    AdmissionState,
    Approval,
    ApprovalStatus,
    Event,
    Reason,
    Run,
    RunState,
    Start,
    Suspension,
)
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


# DESIGN §4: who may answer which reason, by door. The dispatch door has no row:
# a flow wait's nonce and decision token are its gate.
REFUSALS: dict[tuple[str, str], type[Exception]] = {
    (Reason.APPROVAL, "one_shot"): RequiresApproval,
    (Reason.AGENT_REPLY, "one_shot"): AgentReplyOnly,
    (Reason.EXTERNAL_TOOL, "decide"): NotAnApproval,
    (Reason.AGENT_REPLY, "decide"): NotAnApproval,
    (Reason.EXTERNAL_TOOL, "admit"): NotAnAgentReply,
    (Reason.APPROVAL, "admit"): NotAnAgentReply,
}


def check_reason(suspension: Suspension | None, version: Version, door: str) -> None:
    """DESIGN §4 for the pause the version names: the run's own doors refuse a flow wait too."""
    if suspension is None or suspension.id != version.suspension_id:
        return
    if suspension.correlation_id:
        raise WrongGate("this wait is resumed only by its correlation id, through the dispatch door")
    refusal = REFUSALS.get((suspension.reason, door))
    if refusal is not None:
        raise refusal()


def is_current(run: Run, live: Suspension | None, version: Version) -> bool:
    """The version names the run's live pause at its current revision: it may be claimed now."""
    return (
        run.state == RunState.PAUSED
        and live is not None
        and live.id == version.suspension_id
        and run.revision == version.run_revision
    )


def earlier_claim(run: Run, live: Suspension | None, version: Version) -> Admission | None:
    """None when the version may be claimed now; the admission that already claimed it; or the loser's 409.

    A claim against a pause that was already replaced (ABA) is a version conflict.
    """
    if is_current(run, live, version):
        return None
    claims_sql.lock_answers()  # an attempt answers a fresh claim only
    existing = Admission.objects.filter(run_id=run.id, suspension_id=version.suspension_id).first()
    if existing is not None:
        return existing
    if run.state == RunState.PAUSED:
        if live is not None and live.id == version.suspension_id:
            raise VersionConflict(f"run {run.id} is at revision {run.revision}, not {version.run_revision}")
        raise VersionConflict(f"run {run.id} is at revision {run.revision} on another pause")
    # The loser of a race: the pause is gone and nothing it could replay exists.
    raise NotSuspended(f"run {run.id} is {run.state}, not paused on {version.suspension_id}")


def replay_or_conflict(run: Run, existing: Admission, request_digest: str) -> None:
    """Raise unless `existing` is the identical request (then the caller replays it)."""
    if existing.request_digest == request_digest:
        return
    if run.revision == existing.claimed_revision:
        raise AdmissionConflict(
            "this pause was already claimed by a different request",
            request_digest=request_digest,
            admitted_digest=existing.request_digest,
        )
    raise VersionConflict(f"the pause was claimed and run {run.id} has moved on to revision {run.revision}")


@dataclass
class Claim:
    """The outcome of `claim`: the locked run, its live pause and the clock; a fresh or replayed admission."""

    run: Run
    live: Suspension | None
    now: datetime
    admission: Admission
    fresh: bool
    admitted: Event | None = None  # the unsaved event of a fresh claim


# The input a claim binds, given the live pause and the admission that already claimed it (if any).
InputOf = Callable[[Suspension | None, Admission | None], str]


def claim(
    *,
    principal: Principal,
    run_id: UUID | str,
    version: Version,
    role: str,
    door: str | None,
    source: str,
    input_of: InputOf,
    state: str = AdmissionState.ADMITTED,
    check: Callable[[Suspension], None] | None = None,
) -> Claim:
    """T4, the one claim sequence of every claiming door (one-shot, approval, agent reply, dispatch).

    Call inside `transaction.atomic()`. Locks the run, checks the role in its
    scope and the reason for `door` (None: the dispatch door, gated before),
    then: the identical request again returns the original admission with
    fresh=False; a different one is 409; otherwise the deadline (410) and
    `check(live)` run, the run moves to `running` (rev + 1) and the admission
    row is written. The caller saves `admitted` with the events it adds.
    """
    run, live, now = lock_run(principal, run_id)
    require(principal, role, run.scope)
    if door is not None:
        check_reason(live, version, door)
    existing = earlier_claim(run, live, version)
    input_text = input_of(live, existing)
    request_digest = digests.request_digest(scope=run.scope, version=version.as_dict(), input=input_text)
    if existing is not None:
        replay_or_conflict(run, existing, request_digest)
        return Claim(run=run, live=live, now=now, admission=existing, fresh=False)
    assert live is not None
    check_deadline(live, now)
    if check is not None:
        check(live)
    return admit(
        principal=principal,
        run=run,
        live=live,
        now=now,
        version=version,
        source=source,
        input_text=input_text,
        request_digest=request_digest,
        state=state,
    )


def admit(
    *,
    principal: Principal,
    run: Run,
    live: Suspension,
    now: datetime,
    version: Version,
    source: str,
    input_text: str,
    request_digest: str,
    state: str = AdmissionState.ADMITTED,
) -> Claim:
    """T4's writes, after every check passed under the run lock: the run moves to `running`, the admission row.

    Returns the fresh Claim with its unsaved `admitted` event.
    """
    move(run, RunState.RUNNING, now)
    admission = Admission(
        run_id=run.id,
        suspension_id=live.id,
        source=source,
        state=state,
        input=input_text,
        request_digest=request_digest,
        suspension_digest=suspension_digest_of(live),
        version_revision=version.run_revision,
        claimed_revision=run.revision,
        actor=principal.name,
        admitted_at=now,
    )
    admission.stamp_scope(run.scope)
    claims_sql.insert([admission])
    admitted = event(
        run,
        "admitted",
        principal.name,
        now,
        suspension_id=str(live.id),
        admission_id=str(admission.id),
        source=source,
        request_digest=request_digest,
    )
    return Claim(run=run, live=live, now=now, admission=admission, fresh=True, admitted=admitted)


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
