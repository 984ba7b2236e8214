"""Every state change of DESIGN §3, one function per transition, one transaction each.

Lock contract (STYLE rules 3 and 4): a claim locks the run row first
(`SELECT ... FOR NO KEY UPDATE OF run`, with its live suspension joined and
the database clock read in the same statement), then reads admissions, then
raises every refusal, then writes. Nothing is written before the last check,
so a refusal leaves no trace. The event of each change is written in the same
transaction as the change.
"""

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.db.models import DateTimeField, Func

from .. import digests, scopes, selectors
from ..exceptions import (
    AdmissionConflict,
    AgentReplyOnly,
    AlreadySuspended,
    Forbidden,
    InputTooLarge,
    InvalidRequest,
    InvalidState,
    NotAnAgentReply,
    NotAnApproval,
    NotFound,
    NotSuspended,
    ReplyMismatch,
    RequiresApproval,
    ResultsMismatch,
    ResumeAlreadyStarted,
    SuspensionExpired,
    VersionConflict,
    WrongGate,
)
from ..models import (
    Admission,
    AdmissionSource,
    AdmissionState,
    Approval,
    ApprovalStatus,
    Event,
    Reason,
    Role,
    Run,
    RunState,
    Start,
    Suspension,
)
from ..principals import Principal

FAR_FUTURE = datetime(9999, 12, 31, tzinfo=digests.UTC)


class ClockTimestamp(Func):
    """PostgreSQL's clock at the moment of the statement (one `now` per request)."""

    template = "CLOCK_TIMESTAMP()"
    output_field = DateTimeField()


@dataclass(frozen=True)
class Version:
    """The claim version `{run_id, suspension_id, run_revision}` the caller saw."""

    run_id: UUID
    suspension_id: UUID
    run_revision: int

    def as_dict(self) -> dict[str, Any]:
        return digests.version_dict(self.run_id, self.suspension_id, self.run_revision)


@dataclass
class Claimed:
    """What a claim or a start answers: a receipt, whether it is fresh, and (fresh starts only) the pause."""

    run: Run
    admission: Admission | None = None
    start: Start | None = None
    suspension: Suspension | None = None
    fresh: bool = True
    results: list[dict[str, Any]] | None = None


def db_now() -> datetime:
    """The database clock, for changes that take no run lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT clock_timestamp()")
            return cursor.fetchone()[0]  # type: ignore[index]
    from django.utils import timezone

    return timezone.now()


# -- helpers ------------------------------------------------------------------


def _lock_run(principal: Principal, run_id: UUID | str) -> tuple[Run, Suspension | None, datetime]:
    """Lock one visible run (404 otherwise) and read its live pause and the clock in the same statement."""
    query = selectors.runs(principal).filter(pk=run_id).select_related("suspension")
    query = query.select_for_update(no_key=True, of=("self",))
    postgres = connection.vendor == "postgresql"
    if postgres:
        query = query.annotate(db_now=ClockTimestamp())
    run = query.first()
    if run is None:
        raise NotFound(f"run {run_id} not found")
    try:
        suspension: Suspension | None = run.suspension
    except Suspension.DoesNotExist:
        suspension = None
    # SQLite's own clock has millisecond resolution: the embedded default reads
    # the one clock db_now() reads, so the deadline partition never disagrees with itself.
    return run, suspension, run.db_now if postgres else db_now()  # type: ignore[attr-defined]


def _require(principal: Principal, role: str, scope: str) -> None:
    if not principal.can(role, scope):
        raise Forbidden(f"the '{role}' role is required in scope '{scope}'")


def _event(run: Run, kind: str, actor: str, at: datetime, **data: Any) -> Event:
    event = Event(run_id=run.id, kind=kind, actor=actor, revision=run.revision, data=data, at=at)
    event.stamp_scope(run.scope)
    return event


def _move(run: Run, state: str, now: datetime, **fields: Any) -> None:
    """The run's state change: revision + 1 (the fencing token), one UPDATE."""
    run.state = state
    run.revision += 1
    run.updated_at = now
    for name, value in fields.items():
        setattr(run, name, value)
    Run.objects.filter(pk=run.pk).update(state=state, revision=run.revision, updated_at=now, **fields)


def _loads(text: str) -> Any:
    return json.loads(text)


def _bounded_input(value: Any) -> str:
    """Encode `value` (a list or a JSON string) as the retained input; 413 past the bound."""
    try:
        encoded = digests.canonical(value)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc
    if len(encoded) > settings.MAX_INPUT_BYTES:
        raise InputTooLarge(f"the input encodes to {len(encoded)} bytes; the bound is {settings.MAX_INPUT_BYTES}")
    return encoded.decode("utf-8")


def suspension_digest_of(s: Suspension) -> str:
    return digests.suspension_digest(
        id=s.id,
        run_id=s.run_id,
        scope=s.scope,
        reason=s.reason,
        pending=_loads(s.pending),
        continuation=_loads(s.continuation),
        expires_at=s.expires_at,
    )


def _check_reason(suspension: Suspension | None, version: Version, path: str) -> None:
    """DESIGN §4: who may answer which reason. Applies to the pause the version names."""
    if suspension is None or suspension.id != version.suspension_id:
        return
    if suspension.correlation_id:
        # A flow wait opens only through its gate (nonce, decision token): services/flows.py.
        raise WrongGate("this wait is resumed only by its correlation id, through POST /api/v1/dispatch/resume")
    refusals = {
        (Reason.APPROVAL, "one_shot"): RequiresApproval,
        (Reason.AGENT_REPLY, "one_shot"): AgentReplyOnly,
        (Reason.EXTERNAL_TOOL, "decide"): NotAnApproval,
        (Reason.AGENT_REPLY, "decide"): NotAnApproval,
        (Reason.EXTERNAL_TOOL, "admit"): NotAnAgentReply,
        (Reason.APPROVAL, "admit"): NotAnAgentReply,
    }
    refusal = refusals.get((Reason(suspension.reason), path))
    if refusal is not None:
        raise refusal()


def _existing_claim(run: Run, suspension: Suspension | None, version: Version) -> Admission | None:
    """Decide whether `version` may be claimed now; raise the loser's refusal otherwise.

    Returns None when the pause the version names is live and current, or the
    admission that already claimed it (the caller compares digests). A claim
    against a pause that was already replaced (ABA) is a version conflict.
    """
    if (
        run.state == RunState.PAUSED
        and suspension is not None
        and suspension.id == version.suspension_id
        and run.revision == version.run_revision
    ):
        return None
    existing = Admission.objects.filter(run_id=run.id, suspension_id=version.suspension_id).first()
    if existing is not None:
        return existing
    if run.state == RunState.PAUSED:
        raise VersionConflict(f"run {run.id} is at revision {run.revision} on another pause")
    # The loser of a race: the pause is gone and nothing it could replay exists.
    raise NotSuspended(f"run {run.id} is {run.state}, not paused on {version.suspension_id}")


def _replay_or_conflict(run: Run, existing: Admission, request_digest: str) -> None:
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


def _claim_or_replay(
    run: Run, live: Suspension | None, version: Version, input_text: str, now: datetime
) -> tuple[str, Admission | None]:
    """The shared head of every claim: (request digest, the admission to replay or None to proceed).

    Raises the loser's refusal (409) or, for a claim that may proceed, 410 past the deadline.
    """
    request_digest = digests.request_digest(scope=run.scope, version=version.as_dict(), input=input_text)
    existing = _existing_claim(run, live, version)
    if existing is not None:
        _replay_or_conflict(run, existing, request_digest)
        return request_digest, existing
    assert live is not None
    _check_deadline(live, now)
    return request_digest, None


def _check_deadline(suspension: Suspension, now: datetime) -> None:
    """Deadline partition: at exactly expires_at the row belongs to the sweeper."""
    if suspension.expires_at is not None and suspension.expires_at <= now:
        raise SuspensionExpired(f"pause {suspension.id} expired at {digests.rfc3339(suspension.expires_at)}")


def _write_admission(
    *,
    run: Run,
    suspension: Suspension,
    version: Version,
    source: str,
    input_text: str,
    request_digest: str,
    actor: str,
    now: datetime,
    state: str = AdmissionState.ADMITTED,
) -> tuple[Admission, Event]:
    _move(run, RunState.RUNNING, now)
    admission = Admission(
        run_id=run.id,
        suspension_id=suspension.id,
        source=source,
        state=state,
        input=input_text,
        request_digest=request_digest,
        suspension_digest=suspension_digest_of(suspension),
        version_revision=version.run_revision,
        claimed_revision=run.revision,
        actor=actor,
        admitted_at=now,
    )
    admission.stamp_scope(run.scope)
    admission.save(force_insert=True)
    event = _event(
        run, "admitted", actor, now, suspension_id=str(suspension.id), source=source, request_digest=request_digest
    )
    return admission, event


def _write_start(
    *, run: Run, admission: Admission, suspension: Suspension, actor: str, now: datetime
) -> tuple[Start, Event]:
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
    start.save(force_insert=True)
    # The pause is consumed by the start; the admission and start rows are its evidence.
    Suspension.objects.filter(pk=suspension.pk).delete()
    event = _event(run, "started", actor, now, suspension_id=str(suspension.id), start_digest=start.digest)
    return start, event


def _resolve_approval(suspension_id: UUID, status: str, now: datetime, actor: str = "", note: str = "") -> None:
    Approval.objects.filter(suspension_id=suspension_id, status=ApprovalStatus.PENDING).update(
        status=status, resolved_at=now, decided_by=actor, note=note
    )


# -- T1 -------------------------------------------------------------------------


def register_run(*, principal: Principal, agent_id: str, scope: str | None = None, session_id: str = "") -> Run:
    """T1 register: a new run `running` at revision 1 in a scope the engine holds."""
    if scope is None:
        held = principal.scopes_with(Role.ENGINE)
        if len(held) != 1:
            raise InvalidRequest("scope is required", errors={"scope": ["Name the scope of the run."]})
        scope = held[0]
    if not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    _require(principal, Role.ENGINE, scope)
    with transaction.atomic():
        now = db_now()
        run = Run(agent_id=agent_id, session_id=session_id, created_at=now, updated_at=now)
        run.stamp_scope(scope)
        run.save(force_insert=True)
        _event(run, "registered", principal.name, now, agent_id=agent_id).save(force_insert=True)
    return run


# -- T2 -------------------------------------------------------------------------


def suspend_run(
    *,
    principal: Principal,
    run_id: UUID | str,
    revision: int,
    reason: str,
    pending: list[dict[str, Any]],
    continuation: dict[str, Any],
    ttl_seconds: int | None = None,
    correlation_id: str = "",
) -> Suspension:
    """T2 suspend: a running run at `revision` pauses; opens an approval for `approval` pauses.

    Locks the run. Refuses a stale revision (version_conflict), a live pause
    (already_suspended) and a finished run (invalid_state).
    """
    pending_text = _bounded_input(pending)
    continuation_text = digests.canonical(continuation).decode("utf-8")
    ttl = settings.SUSPENSION_TTL_SECONDS if ttl_seconds is None else ttl_seconds
    with transaction.atomic():
        run, live, now = _lock_run(principal, run_id)
        _require(principal, Role.ENGINE, run.scope)
        if run.revision != revision:
            raise VersionConflict(f"run {run.id} is at revision {run.revision}, not {revision}")
        if run.state == RunState.PAUSED or live is not None:
            raise AlreadySuspended(f"run {run.id} already has a live pause")
        if run.state != RunState.RUNNING:
            raise InvalidState(f"run {run.id} is {run.state}")
        expires_at = now + timedelta(seconds=ttl) if ttl else None
        suspension = Suspension(
            run=run,
            reason=reason,
            pending=pending_text,
            continuation=continuation_text,
            tool_names="," + ",".join(c["name"] for c in pending) + ",",
            reply_with=pending[0].get("reply_with", "") if reason == Reason.AGENT_REPLY else "",
            correlation_id=correlation_id,
            expires_at=expires_at,
            deadline=expires_at or FAR_FUTURE,
            created_at=now,
        )
        suspension.stamp_scope(run.scope)
        suspension.save(force_insert=True)
        if reason == Reason.APPROVAL:
            approval = Approval(
                suspension_id=suspension.id,
                run_id=run.id,
                agent_id=run.agent_id,
                pending=pending_text,
                requested_by=principal.name,
                expires_at=expires_at,
                created_at=now,
            )
            approval.stamp_scope(run.scope)
            approval.save(force_insert=True)
        # A new pause ends the execution the previous start granted.
        Admission.objects.filter(run_id=run.id, state=AdmissionState.STARTED).update(state=AdmissionState.DONE)
        _move(run, RunState.PAUSED, now, last_reason=reason)
        _event(
            run,
            "suspended",
            principal.name,
            now,
            suspension_id=str(suspension.id),
            reason=reason,
            expires_at=digests.rfc3339(expires_at),
        ).save(force_insert=True)
    suspension.run = run
    return suspension


# -- T3 / T4 / T5 -----------------------------------------------------------------


def _order_results(pending: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results matched one to one with the pending calls, in pending order (422 otherwise)."""
    by_id: dict[str, dict[str, Any]] = {}
    for result in results:
        if result["call_id"] in by_id:
            raise ResultsMismatch(f"call {result['call_id']} has more than one result")
        by_id[result["call_id"]] = result
    expected = [call["id"] for call in pending]
    unknown = sorted(set(by_id) - set(expected))
    missing = [call_id for call_id in expected if call_id not in by_id]
    if unknown or missing:
        raise ResultsMismatch("results do not match the pending calls", unknown=unknown, missing=missing)
    return [by_id[call_id] for call_id in expected]


def resume_run(*, principal: Principal, run_id: UUID | str, version: Version, results: list[dict[str, Any]]) -> Claimed:
    """T3 one-shot resume of an `external_tool` pause: T4 admit and T5 start in one transaction.

    Locks the run. The identical request again answers the original receipts
    with fresh=False and no continuation, even after the run moved on.
    """
    input_text = _bounded_input(results)
    with transaction.atomic():
        run, live, now = _lock_run(principal, run_id)
        _require(principal, Role.ENGINE, run.scope)
        _check_reason(live, version, "one_shot")
        request_digest, existing = _claim_or_replay(run, live, version, input_text, now)
        if existing is not None:
            start = Start.objects.filter(admission_id=existing.id).first()
            return Claimed(run=run, admission=existing, start=start, fresh=False)
        assert live is not None
        ordered = _order_results(_loads(live.pending), results)
        admission, admitted = _write_admission(
            run=run,
            suspension=live,
            version=version,
            source=AdmissionSource.ONE_SHOT,
            input_text=input_text,
            request_digest=request_digest,
            actor=principal.name,
            now=now,
            state=AdmissionState.STARTED,
        )
        start, started = _write_start(run=run, admission=admission, suspension=live, actor=principal.name, now=now)
        Event.objects.bulk_create([admitted, started])
    return Claimed(run=run, admission=admission, start=start, suspension=live, results=ordered)


def admit_reply(
    *,
    principal: Principal,
    run_id: UUID | str,
    version: Version,
    input: str,
    reply_with: str,
    source: str = AdmissionSource.AGENT_REPLY,
) -> Claimed:
    """T4 admit an agent reply (bus): claims the pause, binds the exact input; grants no execution.

    Locks the run. The identical request again answers the original receipt
    (fresh=False); a different one is admission_conflict naming both digests.
    """
    input_text = _bounded_input(input)
    input_text = input  # retained byte for byte; the bound above measured its JSON encoding
    with transaction.atomic():
        run, live, now = _lock_run(principal, run_id)
        _require(principal, Role.BUS, run.scope)
        _check_reason(live, version, "admit")
        request_digest, existing = _claim_or_replay(run, live, version, input_text, now)
        if existing is not None:
            return Claimed(run=run, admission=existing, fresh=False)
        assert live is not None
        expected = live.reply_with
        if reply_with != expected:
            raise ReplyMismatch(f"reply_with does not match the pending call's ({expected!r})")
        admission, admitted = _write_admission(
            run=run,
            suspension=live,
            version=version,
            source=source,
            input_text=input_text,
            request_digest=request_digest,
            actor=principal.name,
            now=now,
        )
        admitted.save(force_insert=True)
    return Claimed(run=run, admission=admission)


def _approval_input(calls: list[str], note: str, approver: str) -> str:
    # The approver is part of the input: a second approver's identical click is
    # a different decision (a conflict), only the same approver's is a replay.
    return digests.canonical({"decision": "approve", "calls": calls, "note": note, "approver": approver}).decode()


def _approval_run(principal: Principal, suspension_id: UUID | str, version: Version) -> UUID:
    """The run an approval decision addresses: the live pause, or the one a replay recorded."""
    if version.suspension_id != UUID(str(suspension_id)):
        raise InvalidRequest("version.suspension_id must name the approval being decided")
    return version.run_id


def approve(*, principal: Principal, suspension_id: UUID | str, version: Version, note: str = "") -> Claimed:
    """T4 by an approver: the decision is the admitted input; the run waits in the engines' work list.

    Locks the run. The same approver's identical decision again is a replay (fresh=False).
    """
    run_id = _approval_run(principal, suspension_id, version)
    with transaction.atomic():
        run, live, now = _lock_run(principal, run_id)
        _require(principal, Role.APPROVER, run.scope)
        _check_reason(live, version, "decide")
        existing = _existing_claim(run, live, version)
        if existing is not None:
            calls = _loads(existing.input).get("calls", []) if existing.source == AdmissionSource.APPROVAL else []
            input_text = _approval_input(calls, note, principal.name)
            request_digest = digests.request_digest(scope=run.scope, version=version.as_dict(), input=input_text)
            _replay_or_conflict(run, existing, request_digest)
            return Claimed(run=run, admission=existing, fresh=False)
        assert live is not None
        _check_deadline(live, now)
        input_text = _approval_input([c["id"] for c in _loads(live.pending)], note, principal.name)
        request_digest = digests.request_digest(scope=run.scope, version=version.as_dict(), input=input_text)
        admission, admitted = _write_admission(
            run=run,
            suspension=live,
            version=version,
            source=AdmissionSource.APPROVAL,
            input_text=input_text,
            request_digest=request_digest,
            actor=principal.name,
            now=now,
        )
        _resolve_approval(live.id, ApprovalStatus.APPROVED, now, principal.name, note)
        admitted.save(force_insert=True)
    return Claimed(run=run, admission=admission)


@dataclass
class Denied:
    run: Run
    suspension_id: UUID
    reason: str
    fresh: bool = True


def deny_approval(*, principal: Principal, suspension_id: UUID | str, version: Version, reason: str) -> Denied:
    """T6 deny: the run fails with `rejected: <reason>`, the pause is deleted, the approval resolved.

    Locks the run. The same approver's identical denial again is a replay (fresh=False).
    """
    run_id = _approval_run(principal, suspension_id, version)
    with transaction.atomic():
        run, live, now = _lock_run(principal, run_id)
        _require(principal, Role.APPROVER, run.scope)
        _check_reason(live, version, "decide")
        current = (
            run.state == RunState.PAUSED
            and live is not None
            and live.id == version.suspension_id
            and run.revision == version.run_revision
        )
        if not current:
            prior = Approval.objects.filter(
                suspension_id=version.suspension_id, run_id=run.id, status=ApprovalStatus.DENIED
            ).first()
            if prior is not None and prior.decided_by == principal.name and prior.note == reason:
                return Denied(run=run, suspension_id=version.suspension_id, reason=reason, fresh=False)
            _existing_claim(run, live, version)  # raises the loser's refusal
            raise NotSuspended(f"pause {version.suspension_id} was already decided")
        assert live is not None
        _check_deadline(live, now)
        Suspension.objects.filter(pk=live.pk).delete()
        _resolve_approval(live.id, ApprovalStatus.DENIED, now, principal.name, reason)
        _move(run, RunState.FAILED, now, error=f"rejected: {reason}")
        _event(run, "denied", principal.name, now, suspension_id=str(live.id), reason=reason).save(force_insert=True)
    return Denied(run=run, suspension_id=live.id, reason=reason)


def start_admission(*, principal: Principal, admission_id: UUID | str) -> Claimed:
    """T5 start: the single grant to execute an admitted continuation.

    Locks the run (before reading the admission again). Only the fresh start
    carries the suspension; a second start is resume_already_started with the
    start receipt.
    """
    found = selectors.admissions(principal).filter(pk=admission_id).values_list("run_id", flat=True).first()
    if found is None:
        raise NotFound(f"admission {admission_id} not found")
    with transaction.atomic():
        run, live, now = _lock_run(principal, found)
        _require(principal, Role.ENGINE, run.scope)
        admission = Admission.objects.get(pk=admission_id)
        start = Start.objects.filter(admission_id=admission.id).first()
        if start is not None:
            raise ResumeAlreadyStarted(receipt=start_receipt(start))
        if admission.state == AdmissionState.EXPIRED:
            raise SuspensionExpired(f"admission {admission.id} expired before it was started")
        if admission.state != AdmissionState.ADMITTED or live is None or live.id != admission.suspension_id:
            raise InvalidState(f"admission {admission.id} is {admission.state} and can no longer start")
        _check_deadline(live, now)
        Admission.objects.filter(pk=admission.pk).update(state=AdmissionState.STARTED)
        admission.state = AdmissionState.STARTED
        start, started = _write_start(run=run, admission=admission, suspension=live, actor=principal.name, now=now)
        started.save(force_insert=True)
    return Claimed(run=run, admission=admission, start=start, suspension=live)


# -- T7 / T8 -----------------------------------------------------------------------


def _finish(principal: Principal, run_id: UUID | str, revision: int, state: str, kind: str, error: str = "") -> Run:
    with transaction.atomic():
        run, live, now = _lock_run(principal, run_id)
        _require(principal, Role.ENGINE, run.scope)
        # Revision first: a fenced worker (closed, expired) learns its revision is stale.
        if run.revision != revision:
            raise VersionConflict(f"run {run.id} is at revision {run.revision}, not {revision}")
        allowed = {RunState.RUNNING, RunState.PAUSED} if state == RunState.CANCELLED else {RunState.RUNNING}
        if run.state not in allowed:
            raise InvalidState(f"run {run.id} is {run.state}")
        if live is not None:
            if run.state == RunState.PAUSED:
                _check_deadline(live, now)
            Suspension.objects.filter(pk=live.pk).delete()
            _resolve_approval(live.id, ApprovalStatus.CANCELLED, now, principal.name)
        final = AdmissionState.CANCELLED if state == RunState.CANCELLED else AdmissionState.DONE
        Admission.objects.filter(run_id=run.id, state__in=[AdmissionState.ADMITTED, AdmissionState.STARTED]).update(
            state=final
        )
        _move(run, state, now, error=error)
        _event(run, kind, principal.name, now, **({"error": error} if error else {})).save(force_insert=True)
    return run


def complete_run(*, principal: Principal, run_id: UUID | str, revision: int) -> Run:
    """T8 complete: a running run at `revision` completes; its admission is done. Locks the run."""
    return _finish(principal, run_id, revision, RunState.COMPLETED, "completed")


def fail_run(*, principal: Principal, run_id: UUID | str, revision: int, error: str) -> Run:
    """T8 fail: a running run at `revision` fails with `error`; its admission is done. Locks the run."""
    return _finish(principal, run_id, revision, RunState.FAILED, "failed", error)


def cancel_run(*, principal: Principal, run_id: UUID | str, revision: int) -> Run:
    """T7 cancel: a paused (unexpired) or running run at `revision` is cancelled; its pause deleted. Locks the run."""
    return _finish(principal, run_id, revision, RunState.CANCELLED, "cancelled")


# -- receipts ------------------------------------------------------------------------


def admission_receipt(admission: Admission, *, fresh: bool) -> dict[str, Any]:
    """The immutable proof of a claim: no mutable state in it, so a replay answers it unchanged."""
    return {
        "id": str(admission.id),
        "run_id": str(admission.run_id),
        "suspension_id": str(admission.suspension_id),
        "scope": admission.scope,
        "source": admission.source,
        "version": digests.version_dict(admission.run_id, admission.suspension_id, admission.version_revision),
        "request_digest": admission.request_digest,
        "suspension_digest": admission.suspension_digest,
        "claimed_revision": admission.claimed_revision,
        "admitted_at": digests.rfc3339(admission.admitted_at),
        "actor": admission.actor,
        # Integrity: the digest recomputed from the retained request.
        "valid": digests.request_digest(
            scope=admission.scope,
            version=digests.version_dict(admission.run_id, admission.suspension_id, admission.version_revision),
            input=admission.input,
        )
        == admission.request_digest,
        "fresh": fresh,
    }


def start_receipt(start: Start) -> dict[str, Any]:
    return {
        "run_id": str(start.run_id),
        "suspension_id": str(start.suspension_id),
        "run_revision": start.run_revision,
        "request_digest": start.request_digest,
        "started_at": digests.rfc3339(start.started_at),
        "digest": start.digest,
        "valid": digests.start_digest(
            run_id=start.run_id,
            suspension_id=start.suspension_id,
            run_revision=start.run_revision,
            request_digest=start.request_digest,
            started_at=start.started_at,
        )
        == start.digest,
    }


def suspension_body(s: Suspension) -> dict[str, Any]:
    """The pause as the engine gave it (RunConfig's absent tools_restricted reads as false)."""
    continuation = _loads(s.continuation)
    config = continuation.get("config")
    if isinstance(config, dict):
        config.setdefault("tools_restricted", False)
    return {
        "id": str(s.id),
        "run_id": str(s.run_id),
        "scope": s.scope,
        "reason": s.reason,
        "pending": _loads(s.pending),
        "continuation": continuation,
        "expires_at": digests.rfc3339(s.expires_at),
        "created_at": digests.rfc3339(s.created_at),
        "correlation_id": s.correlation_id or None,
    }
