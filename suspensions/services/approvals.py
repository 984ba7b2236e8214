"""An approver's decision (DESIGN §3 T4/T6, §4): approve admits the decision, deny fails the run.

`decide` is the one entry for the API and the console: both hand it the
principal, the approval, the version the approver saw and the decision.
"""

import json
from dataclasses import dataclass
from uuid import UUID

from django.db import transaction

from .. import digests
from ..exceptions import InvalidRequest, NotSuspended
from ..models import Admission, AdmissionSource, Approval, ApprovalStatus, Role, RunState, Suspension
from ..models import Run as RunModel
from ..observability import metrics
from ..principals import Principal
from .claims import (
    Claimed,
    Version,
    check_deadline,
    check_reason,
    claim,
    earlier_claim,
    event,
    is_current,
    lock_run,
    move,
    require,
    resolve_approval,
    write_events,
)


@dataclass
class Denied:
    run: RunModel
    suspension_id: UUID
    reason: str
    fresh: bool = True


Decision = Claimed | Denied


def _approval_input(calls: list[str], note: str, approver: str) -> str:
    # The approver is part of the input: a second approver's identical click is
    # a different decision (a conflict), only the same approver's is a replay.
    return digests.canonical({"decision": "approve", "calls": calls, "note": note, "approver": approver}).decode()


def _check_version(suspension_id: UUID | str, version: Version) -> None:
    if str(version.suspension_id) != str(suspension_id):
        raise InvalidRequest(
            "version.suspension_id must name the approval being decided",
            errors={"version": {"suspension_id": ["Mismatch."]}},
        )


@metrics.counted_claim("approval")
def approve(*, principal: Principal, suspension_id: UUID | str, version: Version, note: str = "") -> Claimed:
    """T4 by an approver: the decision is the admitted input; the run waits in the engines' work list.

    Locks the run. The same approver's identical decision again is a replay (fresh=False).
    """
    _check_version(suspension_id, version)

    def decision_of(live: Suspension | None, existing: Admission | None) -> str:
        if existing is not None:
            earlier = json.loads(existing.input) if existing.source == AdmissionSource.APPROVAL else {}
            return _approval_input(earlier.get("calls", []), note, principal.name)
        assert live is not None
        return _approval_input([c["id"] for c in json.loads(live.pending)], note, principal.name)

    with transaction.atomic():
        c = claim(
            principal=principal,
            run_id=version.run_id,
            version=version,
            role=Role.APPROVER,
            door="decide",
            source=AdmissionSource.APPROVAL,
            input_of=decision_of,
        )
        if c.fresh:
            assert c.live is not None and c.admitted is not None
            resolve_approval(c.live.id, ApprovalStatus.APPROVED, c.now, principal.name, note)
            write_events(c.admitted)
    return Claimed(run=c.run, admission=c.admission, fresh=c.fresh)


@metrics.counted_claim("deny")
def deny_approval(*, principal: Principal, suspension_id: UUID | str, version: Version, reason: str) -> Denied:
    """T6 deny: the run fails with `rejected: <reason>`, the pause is deleted, the approval resolved.

    Locks the run. The same approver's identical denial again is a replay (fresh=False).
    """
    _check_version(suspension_id, version)
    with transaction.atomic():
        run, live, now = lock_run(principal, version.run_id)
        require(principal, Role.APPROVER, run.scope)
        check_reason(live, version, "decide")
        if not is_current(run, live, version):
            prior = Approval.objects.filter(
                suspension_id=version.suspension_id, run_id=run.id, status=ApprovalStatus.DENIED
            ).first()
            if prior is not None and prior.decided_by == principal.name and prior.note == reason:
                return Denied(run=run, suspension_id=version.suspension_id, reason=reason, fresh=False)
            earlier_claim(run, live, version)  # raises the loser's refusal
            raise NotSuspended(f"pause {version.suspension_id} was already decided")
        assert live is not None
        check_deadline(live, now)
        Suspension.objects.filter(pk=live.pk).delete()
        resolve_approval(live.id, ApprovalStatus.DENIED, now, principal.name, reason)
        move(run, RunState.FAILED, now, error=f"rejected: {reason}")
        write_events(event(run, "denied", principal.name, now, suspension_id=str(live.id), reason=reason))
    return Denied(run=run, suspension_id=live.id, reason=reason)


def decide(
    *, principal: Principal, suspension_id: UUID | str, version: Version, decision: str, reason: str = ""
) -> Decision:
    """The approver's decision, for the API and the console alike: approve (T4) or deny (T6)."""
    if decision == "approve":
        return approve(principal=principal, suspension_id=suspension_id, version=version, note=reason)
    if decision == "deny":
        if not reason.strip():
            raise InvalidRequest("a denial needs a reason", errors={"reason": ["A denial needs a reason."]})
        return deny_approval(principal=principal, suspension_id=suspension_id, version=version, reason=reason)
    raise InvalidRequest("decision must be approve or deny", errors={"decision": ["Must be approve or deny."]})
