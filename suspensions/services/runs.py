"""A run's own life: T1 register, T2 suspend, T7 cancel, T8 complete and fail (DESIGN §3).

Each is one transaction that locks the run first (claims.lock_run) and writes
its Event in it.
"""

from datetime import timedelta
from typing import Any
from uuid import UUID

from django.conf import settings

from .. import digests, floors, scopes, selectors
from ..exceptions import AlreadySuspended, InvalidRequest, InvalidState, VersionConflict
from ..models import Admission, AdmissionState, Approval, ApprovalStatus, Reason, Role, Run, RunState, Suspension
from ..principals import Principal
from . import attempts, claims_sql
from .claims import (
    FAR_FUTURE,
    bounded_input,
    check_deadline,
    db_now,
    event,
    lock_run,
    move,
    require,
    resolve_approval,
    write_events,
)


def register_run(*, principal: Principal, agent_id: str, scope: str | None = None, session_id: str = "") -> Run:
    """T1 register: a new run `running` at revision 1 in a scope the engine holds (attempts.attempted)."""
    if scope is None:
        held = principal.scopes_with(Role.ENGINE)
        if len(held) != 1:
            raise InvalidRequest("scope is required", errors={"scope": ["Name the scope of the run."]})
        scope = held[0]
    if not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    require(principal, Role.ENGINE, scope)

    def register() -> Run:
        now = db_now()
        run = Run(agent_id=agent_id, session_id=session_id, created_at=now, updated_at=now)
        run.stamp_scope(scope)
        claims_sql.insert([run])
        write_events(event(run, "registered", principal.name, now, agent_id=agent_id))
        return run

    return attempts.attempted(register)


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
    approval: dict[str, Any] | None = None,
) -> Suspension:
    """T2 suspend: a running run at `revision` pauses; opens an approval for `approval` pauses.

    One guarded statement, or under the run lock (attempts.attempted).
    Refuses a stale revision (version_conflict), a live pause
    (already_suspended) and a finished run (invalid_state). `approval` is the
    pause's policy (DESIGN §15), validated by the caller.
    """
    pending_text = bounded_input(pending)
    continuation_text = digests.canonical(continuation).decode("utf-8")
    ttl = settings.SUSPENSION_TTL_SECONDS if ttl_seconds is None else ttl_seconds

    def suspend() -> Suspension:
        run, live, now = lock_run(principal, run_id)
        require(principal, Role.ENGINE, run.scope)
        if run.revision != revision:
            raise VersionConflict(f"run {run.id} is at revision {run.revision}, not {revision}")
        if run.state == RunState.PAUSED or live is not None:
            raise AlreadySuspended(f"run {run.id} already has a live pause")
        if run.state != RunState.RUNNING:
            raise InvalidState(f"run {run.id} is {run.state}")
        # The policy raised to the scope's approval floors, read before the first write (one attempt, one write).
        floor = floors.combine(selectors.covering_floors(run.scope)) if reason == Reason.APPROVAL else None
        applied = floors.apply(floor, approval)
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
        claims_sql.insert([suspension])
        if reason == Reason.APPROVAL:
            _open_approval(principal, run, suspension, applied.columns)
        # A new pause ends the execution the previous start granted.
        claims_sql.close_started(run.id)
        move(run, RunState.PAUSED, now, last_reason=reason)
        suspended = event(
            run,
            "suspended",
            principal.name,
            now,
            suspension_id=str(suspension.id),
            reason=reason,
            expires_at=digests.rfc3339(expires_at),
            **applied.event_data(),
        )
        # What an approval request announces beyond the event: who asks, for which tools (DESIGN §14).
        write_events(suspended, announce={"agent_id": run.agent_id, "tools": [c["name"] for c in pending]})
        suspension.run = run
        return suspension

    return attempts.attempted(suspend)


def _open_approval(principal: Principal, run: Run, suspension: Suspension, policy: dict[str, Any]) -> None:
    """The approval request, keeping what was asked and its policy: it outlives the pause (deny, start, expiry)."""
    approval = Approval(
        **policy,
        requester_user_id=principal.user_id,
        suspension_id=suspension.id,
        run_id=run.id,
        agent_id=run.agent_id,
        pending=suspension.pending,
        requested_by=principal.name,
        expires_at=suspension.expires_at,
        created_at=suspension.created_at,
    )
    approval.stamp_scope(run.scope)
    claims_sql.insert([approval])


def _finish(principal: Principal, run_id: UUID | str, revision: int, state: str, kind: str, error: str = "") -> Run:
    with claims_sql.transition():
        run, live, now = lock_run(principal, run_id)
        require(principal, Role.ENGINE, run.scope)
        # Revision first: a fenced worker (closed, expired) learns its revision is stale.
        if run.revision != revision:
            raise VersionConflict(f"run {run.id} is at revision {run.revision}, not {revision}")
        allowed = {RunState.RUNNING, RunState.PAUSED} if state == RunState.CANCELLED else {RunState.RUNNING}
        if run.state not in allowed:
            raise InvalidState(f"run {run.id} is {run.state}")
        if live is not None:
            if run.state == RunState.PAUSED:
                check_deadline(live, now)
            claims_sql.delete_pause(live.pk)
            resolve_approval(live.id, ApprovalStatus.CANCELLED, now, principal.name)
        final = AdmissionState.CANCELLED if state == RunState.CANCELLED else AdmissionState.DONE
        Admission.objects.filter(run_id=run.id, state__in=[AdmissionState.ADMITTED, AdmissionState.STARTED]).update(
            state=final
        )
        move(run, state, now, error=error)
        write_events(event(run, kind, principal.name, now, **({"error": error} if error else {})))
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
