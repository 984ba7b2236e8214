"""The one claim sequence of every claiming door (T4: one-shot, approval, agent reply, dispatch).

It locks the run and checks, in this order, the role, the reason for the
door (DESIGN §4), whether the version may be claimed now or names an
earlier claim (a replay, or one of the 409s: docs/decisions.md, "Which
409"), the deadline and the door's own check; then it writes: the run
moves to `running` and the admission row is inserted. The lock contract
and the shared parts (the lock, the clock, the event writer) are in
claims.py.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from .. import digests
from ..exceptions import (
    AdmissionConflict,
    AgentReplyOnly,
    NotAnAgentReply,
    NotAnApproval,
    NotSuspended,
    RequiresApproval,
    VersionConflict,
    WrongGate,
)
from ..models import Admission, AdmissionState, Event, Reason, Run, RunState, Suspension
from ..principals import Principal
from . import attempts, claims_sql
from .claims import Version, check_deadline, event, lock_run, move, require, suspension_digest_of

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
    attempts.lock_answers()  # an attempt answers a fresh claim only
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
