"""A run's own life: T1 register, T2 suspend, T7 cancel, T8 complete and fail (docs/api.md, "2. Lifecycle").

Register inserts a new run; the others are doors of the one claim path
(claiming.through), each in one transaction that locks the run first. A
register with its first pause is both, in one transaction (`register_and_pause`).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction

from .. import digests, floors, policies, scopes, selectors, tags
from ..clock import db_now
from ..exceptions import AlreadySuspended, InvalidRequest, InvalidState, ServiceError
from ..models import Admission, AdmissionState, Approval, ApprovalStatus, Reason, Role, Run, RunState, Suspension
from ..principals import Principal
from . import early
from .claiming import Door, through
from .claims import (
    FAR_FUTURE,
    Claimed,
    Locked,
    advance,
    bounded_input,
    check_deadline,
    check_revision,
    check_swept,
    event,
    require,
    resolve_approval,
    write_events,
)


def register_run(
    *,
    principal: Principal,
    agent_id: str,
    scope: str | None = None,
    session_id: str = "",
    tags: Sequence[str] = (),
) -> Run:
    """T1 register: a new run `running` at revision 1 in a scope the engine holds, with its `tags`. No lock."""
    new = registered(principal=principal, agent_id=agent_id, scope=scope, session_id=session_id, tags=tags)
    # No savepoint when a caller's transaction holds it (flows): every refusal came before.
    with transaction.atomic(savepoint=False):
        new.writes.send()
    return new.run


def registered(
    *, principal: Principal, agent_id: str, scope: str | None, session_id: str, tags: Sequence[str]
) -> Locked:
    """T1's checks and rows: the new run and its `registered` event, waiting in the writes of the run as a
    `Locked` (no other transaction can see it yet); the caller sends them. Every refusal comes first."""
    if scope is None:
        held = principal.scopes_with(Role.ENGINE)
        if len(held) != 1:
            raise InvalidRequest("scope is required", errors={"scope": ["Name the scope of the run."]})
        scope = held[0]
    if not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    require(principal, Role.ENGINE, scope)
    now = db_now()
    run = Run(agent_id=agent_id, session_id=session_id, tags=list(tags), created_at=now, updated_at=now)
    run.stamp_scope(scope)
    run._state.fields_cache["suspension"] = None  # a new run has no pause: run.suspension answers without a query
    new = Locked(principal=principal, run=run, live=None, now=now)
    new.writes.insert([run])
    write_events(new.writes, event(run, "registered", principal.name, now, agent_id=agent_id))
    return new


@dataclass
class Paused:
    """A stored pause, and the one-shot resume its early results completed in the same transaction
    (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause")."""

    suspension: Suspension
    resume: Claimed | None = None


@dataclass(frozen=True)
class Pausing:
    """What a suspend's checks found: the policy as the floors raised it, and the resume its early results
    complete (None: none)."""

    applied: floors.Applied
    completes: early.Completion | None


@dataclass(frozen=True)
class Suspend(Door[None, Pausing, Paused]):
    """T2: a running run at `revision` pauses; an approval pause opens its approval request.

    An `external_tool` pause whose calls all have early results is resumed at
    once by the one-shot resume's writes (services/early.py).
    """

    revision: int
    reason: str
    pending: list[dict[str, Any]]
    pending_text: str
    continuation_text: str
    ttl: int
    correlation_id: str
    policy: dict[str, Any] | None
    engine_version: str = ""
    tags: Sequence[str] = field(default=())
    role = Role.ENGINE

    def earlier(self, t: Locked) -> None:
        run = t.run
        check_revision(run, self.revision)
        if run.state == RunState.PAUSED or t.live is not None:
            raise AlreadySuspended(f"run {run.id} already has a live pause")
        if run.state != RunState.RUNNING:
            raise InvalidState(f"run {run.id} is {run.state}")
        return None

    def check(self, t: Locked, current: None) -> Pausing:
        """The policy raised to the scope's approval floors, or refused below one (docs/policies.md, "Floors")."""
        chain = policies.escalation_steps((self.policy or {}).get("escalation") or [])
        problems = policies.escalation_problems(chain, t.run.scope, self.ttl)
        if problems:
            raise InvalidRequest(
                "the escalation chain does not fit this pause", errors={"approval": {"escalation": problems}}
            )
        floor = floors.combine(selectors.covering_floors(t.run.scope)) if self.reason == Reason.APPROVAL else None
        applied = floors.apply(floor, self.policy)
        # A flow wait is resumed only through its own door.
        completes = None if self.correlation_id else early.on_pause(t, self.pending, self.reason)
        return Pausing(applied, completes)

    def write(self, t: Locked, found: Pausing) -> Paused:
        run, now, applied = t.run, t.now, found.applied
        suspension = self.pause(t)
        t.writes.insert([suspension])
        if self.reason == Reason.APPROVAL:
            open_approval(t, suspension, applied.columns)
        # A new pause ends the execution the previous start granted.
        t.writes.update(Admission, {"run_id": run.id, "state": AdmissionState.STARTED}, state=AdmissionState.DONE)
        advance(t, RunState.PAUSED, last_reason=self.reason)
        expires_at = digests.rfc3339(suspension.expires_at)
        suspended = event(
            run,
            "suspended",
            t.principal.name,
            now,
            suspension_id=str(suspension.id),
            reason=self.reason,
            expires_at=expires_at,
            **applied.event_data(),
        )
        # What an approval request announces beyond the event: who asks, for which tools (docs/api.md, "Event types").
        announce = {"agent_id": run.agent_id, "tools": [c["name"] for c in self.pending], "tags": suspension.tags}
        write_events(t.writes, suspended, announce=announce)
        suspension.run = run
        if found.completes is None:
            return Paused(suspension)
        return Paused(suspension, found.completes.resume(t, suspension))

    def pause(self, t: Locked) -> Suspension:
        expires_at = t.now + timedelta(seconds=self.ttl) if self.ttl else None
        first = self.pending[0] if self.pending else {}
        suspension = Suspension(
            run=t.run,
            reason=self.reason,
            pending=self.pending_text,
            continuation=self.continuation_text,
            tool_names="," + ",".join(c["name"] for c in self.pending) + ",",
            reply_with=first.get("reply_with", "") if self.reason == Reason.AGENT_REPLY else "",
            correlation_id=self.correlation_id,
            engine_version=self.engine_version,
            expires_at=expires_at,
            deadline=expires_at or FAR_FUTURE,
            # The run's tags, then the pause's own: a pause is found by either.
            tags=tags.merged(t.run.tags, self.tags),
            created_at=t.now,
        )
        suspension.stamp_scope(t.run.scope)
        return suspension


def suspend_run(**request: Any) -> Suspension:
    """T2 suspend (`pause_run`), for callers that want only the pause."""
    return pause_run(**request).suspension


def pause_run(
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
    engine_version: str = "",
    tags: Sequence[str] = (),
    new: Locked | None = None,
) -> Paused:
    """T2 suspend: a running run at `revision` pauses; opens an approval for `approval` pauses.

    Locks the run. Refuses a stale revision (version_conflict), a live pause
    (already_suspended) and a finished run (invalid_state). `approval` is the
    pause's policy (docs/policies.md), validated by the caller. An `external_tool`
    pause whose calls all have early results comes back resumed (`Paused.resume`).
    `new`: the run this transaction has just registered (register_and_pause), instead of locking `run_id`.
    """
    door = Suspend(
        revision=revision,
        reason=reason,
        pending=pending,
        pending_text=bounded_input(pending),
        continuation_text=digests.canonical(continuation).decode("utf-8"),
        ttl=settings.SUSPENSION_TTL_SECONDS if ttl_seconds is None else ttl_seconds,
        correlation_id=correlation_id,
        policy=approval,
        engine_version=engine_version,
        tags=tags,
    )
    return through(door, principal=principal, run_id=run_id, new=new)


def register_and_pause(
    *,
    principal: Principal,
    agent_id: str,
    pause: Mapping[str, Any],
    scope: str | None = None,
    session_id: str = "",
    tags: Sequence[str] = (),
) -> Paused:
    """T1 then T2 in one transaction (docs/api.md, "One call to pause: `POST /runs` with `suspend`"): the run is
    registered at revision 1 and paused at revision 2, events `registered` then `suspended`.

    `pause` holds `pause_run`'s keywords but the run and its revision. The
    pause goes through the claim path like every suspend, handed the new run
    (`through`'s `new`: nothing to lock, the run's rows and the pause's sent in
    one round trip). A refusal of the pause (its escalation chain, a floor)
    rolls the register back with it, so a refused request writes nothing; its
    field errors are named under `suspend`.
    """
    with transaction.atomic():
        new = registered(principal=principal, agent_id=agent_id, scope=scope, session_id=session_id, tags=tags)
        try:
            return pause_run(principal=principal, run_id=new.run.id, revision=new.run.revision, new=new, **pause)
        except ServiceError as refused:
            if "errors" in refused.extra:  # the pause's fields are the body's `suspend`
                refused.extra["errors"] = {"suspend": refused.extra["errors"]}
            raise


def open_approval(t: Locked, suspension: Suspension, policy: dict[str, Any]) -> None:
    """The approval request, keeping what was asked and its policy: it outlives the pause (deny, start, expiry).

    An escalation chain's first step is due `after_seconds` after the pause was stored (docs/policies.md,
    "Escalation chains").
    """
    chain = policy.get("escalation") or []
    first = suspension.created_at + timedelta(seconds=chain[0]["after_seconds"]) if chain else None
    approval = Approval(
        **{**policy, "escalation": digests.canonical(chain).decode("utf-8") if chain else ""},
        next_escalation_at=first,
        requester_user_id=t.principal.user_id,
        suspension_id=suspension.id,
        run_id=t.run.id,
        agent_id=t.run.agent_id,
        pending=suspension.pending,
        tags=suspension.tags,
        requested_by=t.principal.name,
        expires_at=suspension.expires_at,
        created_at=suspension.created_at,
        at_risk_at=Approval.at_risk_from(suspension.created_at, suspension.expires_at),
    )
    approval.stamp_scope(t.run.scope)
    t.writes.insert([approval])


@dataclass(frozen=True)
class Finish(Door[None, None, Run]):
    """T7 and T8: the run ends `state`; its pause (a cancel's) is deleted, its admissions closed."""

    revision: int
    state: str
    kind: str
    error: str = ""
    role = Role.ENGINE

    def earlier(self, t: Locked) -> None:
        if self.state == RunState.CANCELLED:  # a cancel of a pause past its deadline: 410, swept or not
            check_swept(t.run, revision=self.revision)
        # Revision first: a fenced worker (closed, expired) learns its revision is stale.
        check_revision(t.run, self.revision)
        allowed = {RunState.RUNNING, RunState.PAUSED} if self.state == RunState.CANCELLED else {RunState.RUNNING}
        if t.run.state not in allowed:
            raise InvalidState(f"run {t.run.id} is {t.run.state}")
        return None

    def check(self, t: Locked, current: None) -> None:
        if t.live is not None and t.run.state == RunState.PAUSED:
            check_deadline(t.live, t.now)

    def write(self, t: Locked, found: None) -> Run:
        run, live, actor = t.run, t.live, t.principal.name
        if live is not None:
            t.writes.delete(Suspension, live.pk)
            resolve_approval(t, live, ApprovalStatus.CANCELLED)
        final = AdmissionState.CANCELLED if self.state == RunState.CANCELLED else AdmissionState.DONE
        for open_state in (AdmissionState.ADMITTED, AdmissionState.STARTED):
            t.writes.update(Admission, {"run_id": run.id, "state": open_state}, state=final)
        advance(t, self.state, error=self.error)
        write_events(t.writes, event(run, self.kind, actor, t.now, **({"error": self.error} if self.error else {})))
        return run


def complete_run(*, principal: Principal, run_id: UUID | str, revision: int) -> Run:
    """T8 complete: a running run at `revision` completes; its admission is done. Locks the run."""
    return through(Finish(revision, RunState.COMPLETED, "completed"), principal=principal, run_id=run_id)


def fail_run(*, principal: Principal, run_id: UUID | str, revision: int, error: str) -> Run:
    """T8 fail: a running run at `revision` fails with `error`; its admission is done. Locks the run."""
    return through(Finish(revision, RunState.FAILED, "failed", error), principal=principal, run_id=run_id)


def cancel_run(*, principal: Principal, run_id: UUID | str, revision: int) -> Run:
    """T7 cancel: a paused (unexpired) or running run at `revision` is cancelled; its pause deleted. Locks the run."""
    return through(Finish(revision, RunState.CANCELLED, "cancelled"), principal=principal, run_id=run_id)
