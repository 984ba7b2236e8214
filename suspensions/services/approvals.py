"""An approver's decision (T4/T6 in docs/api.md, "2. Lifecycle"; docs/api.md, "3. Who may do what"; docs/policies.md):
approve (a vote), respond, or deny.

`decide` is the one entry for the API and the console: both hand it the
principal, the approval, the version the approver saw and the decision.

Every approve is a vote, by a distinct person (services/votes.py); what every
decision checks is in services/approval_checks.py. `respond` admits the run
with the approver's words as its input whatever the quorum, and `deny` fails
it (T6): either ends the approval at once.
"""

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from .. import digests, selectors
from ..exceptions import (
    InvalidRequest,
    NotSuspended,
    VersionConflict,
)
from ..models import (
    AdmissionSource,
    Approval,
    ApprovalStatus,
    Role,
    RunState,
    Suspension,
)
from ..models import Run as RunModel
from ..observability import metrics
from ..principals import Principal
from . import delegations
from .approval_checks import check_duties, check_version, record_of
from .claiming import (
    AdmissionDoor,
    Door,
    Replay,
    check_reason,
    claimed_before,
    current_pause,
    through,
)
from .claims import (
    Claimed,
    Locked,
    Version,
    acting,
    advance,
    check_deadline,
    event,
    resolve_approval,
    write_events,
)
from .votes import Voted, approve


@dataclass
class Denied:
    run: RunModel
    suspension_id: UUID
    reason: str
    fresh: bool = True


Decision = Claimed | Denied | Voted


@dataclass(frozen=True)
class Respond(AdmissionDoor[Suspension]):
    """T4 with the approver's words as input instead of the tools; ends the approval whatever its quorum."""

    response: str
    role = Role.APPROVER
    door = "decide"

    def check(self, t: Locked, live: Suspension) -> Suspension:
        check_deadline(live, t.now)
        check_duties(t.principal, record_of(t, self.version))
        return live

    def write(self, t: Locked, live: Suspension) -> Claimed:
        admission, admitted = self.admit(t, live, AdmissionSource.APPROVAL)
        resolve_approval(t, live, ApprovalStatus.RESPONDED, response=self.response)
        write_events(t.writes, admitted, announce={"decision": "respond"})
        return Claimed(run=t.run, admission=admission)


@metrics.counted_claim("respond")
def respond(*, principal: Principal, suspension_id: UUID | str, version: Version, response: str) -> Claimed:
    """T4 with the approver's words as input instead of the tools: the engine resumes its model with them.

    Ends the approval whatever its quorum. Locks the run; the same approver's
    identical response again is a replay (fresh=False).
    """
    check_version(suspension_id, version)
    if not response.strip():
        raise InvalidRequest("a response needs words", errors={"response": ["A response needs words."]})
    body = {"decision": "respond", "response": response, "approver": principal.name}
    if principal.acting_for:  # a delegate's answer (docs/identity.md, "Delegation")
        body["acting_for"] = principal.acting_for
    input_text = digests.canonical(body).decode()
    door = Respond(version=version, input_text=input_text, response=response)
    return through(door, principal=principal, run_id=version.run_id)


@dataclass(frozen=True)
class Deny(Door[Suspension, Suspension, Denied]):
    """T6: the run fails with `rejected: <reason>`, the pause is deleted, the approval resolved."""

    version: Version
    reason: str
    role = Role.APPROVER

    def admits(self, t: Locked) -> None:
        super().admits(t)
        check_reason(t, self.version, "decide")

    def earlier(self, t: Locked) -> Replay[Denied] | Suspension:
        live = current_pause(t, self.version)
        if live is not None:
            return live
        prior = Approval.objects.filter(
            suspension_id=self.version.suspension_id, run_id=t.run.id, status=ApprovalStatus.DENIED
        ).first()
        mine = (t.principal.name, t.principal.acting_for or "", self.reason)
        if prior is not None and (prior.decided_by, prior.acting_for, prior.note) == mine:
            return Replay(Denied(run=t.run, suspension_id=self.version.suspension_id, reason=self.reason, fresh=False))
        claimed_before(t, self.version)  # raises the loser's refusal when nothing claimed it
        raise NotSuspended(f"pause {self.version.suspension_id} was already decided")

    def check(self, t: Locked, live: Suspension) -> Suspension:
        check_deadline(live, t.now)
        check_duties(t.principal, record_of(t, self.version))
        return live

    def write(self, t: Locked, live: Suspension) -> Denied:
        actor = t.principal.name
        t.writes.delete(Suspension, live.pk)
        resolve_approval(t, live, ApprovalStatus.DENIED, self.reason)
        advance(t, RunState.FAILED, error=f"rejected: {self.reason}")
        by = acting(t.principal)
        denied = event(t.run, "denied", actor, t.now, suspension_id=str(live.id), reason=self.reason, **by)
        write_events(t.writes, denied)
        return Denied(run=t.run, suspension_id=live.id, reason=self.reason)


@metrics.counted_claim("deny")
def deny_approval(*, principal: Principal, suspension_id: UUID | str, version: Version, reason: str) -> Denied:
    """T6 deny: the run fails with `rejected: <reason>`, the pause is deleted, the approval resolved.

    Locks the run. Ends a quorum approval whatever votes it has. The same
    approver's identical denial again is a replay (fresh=False).
    """
    check_version(suspension_id, version)
    return through(Deny(version=version, reason=reason), principal=principal, run_id=version.run_id)


def decide(
    *,
    principal: Principal,
    suspension_id: UUID | str,
    version: Version,
    decision: str,
    reason: str = "",
    response: str = "",
    calls: list[dict[str, Any]] | None = None,
    acting_for: str = "",
) -> Decision:
    """The approver's decision, for the API and the console alike: approve (a vote), respond, or deny.

    With `acting_for`, a delegate decides for that person (docs/identity.md, "Delegation"): 403 not_delegated,
    before anything is written, unless a delegation from them to the principal holds now.
    """
    if acting_for:
        principal = delegations.acting(principal, acting_for, delegations.approval_scope(suspension_id))
    try:
        if decision == "approve":
            return approve(principal=principal, suspension_id=suspension_id, version=version, note=reason, edits=calls)
        if decision == "respond":
            return respond(principal=principal, suspension_id=suspension_id, version=version, response=response)
        if decision == "deny":
            if not reason.strip():
                raise InvalidRequest("a denial needs a reason", errors={"reason": ["A denial needs a reason."]})
            return deny_approval(principal=principal, suspension_id=suspension_id, version=version, reason=reason)
    except (NotSuspended, VersionConflict):
        _check_run_of(principal, version)
        raise
    raise InvalidRequest(
        "decision must be approve, deny or respond", errors={"decision": ["Must be approve, deny or respond."]}
    )


def _check_run_of(principal: Principal, version: Version) -> None:
    """A version naming another run than its approval's is the caller's mistake (400), not a lost race (409).

    Asked only after a refusal, so a decision that goes through pays nothing for it; only
    approvals the principal may see are looked at, so it tells nothing of other scopes.
    """
    records = selectors.approval_records(principal).filter(pk=version.suspension_id)
    run_id = records.values_list("run_id", flat=True).first()
    if run_id is not None and str(run_id) != str(version.run_id):
        raise InvalidRequest(
            "version.run_id is not the run of this approval", errors={"version": {"run_id": ["Mismatch."]}}
        )
