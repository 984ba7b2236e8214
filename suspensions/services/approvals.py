"""An approver's decision (T4/T6 in docs/api.md, "2. Lifecycle"; docs/api.md, "3. Who may do what"; docs/policies.md):
approve (a vote), respond, or deny.

`decide` is the one entry for the API and the console: both hand it the
principal, the approval, the version the approver saw and the decision.

Every approve is a vote (`ApprovalVote`), by a distinct person. The vote
that reaches the approval's quorum admits the run (T4) in the same
transaction, with every call's final arguments as its input; a vote short
of it changes no revision, so the version the voters saw stays valid.
`respond` admits the run with the approver's words as its input whatever the
quorum, and `deny` fails it (T6): either ends the approval at once.
"""

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from .. import digests, floors, policies, selectors
from ..exceptions import (
    InvalidRequest,
    NotSuspended,
    SeparationOfDuties,
    VersionConflict,
    VoteMismatch,
)
from ..models import (
    AdmissionSource,
    AdmissionState,
    Approval,
    ApprovalStatus,
    ApprovalVote,
    Role,
    RunState,
    Suspension,
)
from ..models import Run as RunModel
from ..observability import metrics
from ..principals import Principal
from .claiming import AdmissionDoor, Door, admit, check_reason, claimed_before, is_current, refuse_claimed, through
from .claims import (
    Claimed,
    Locked,
    Version,
    advance,
    check_deadline,
    event,
    resolve_approval,
    write_events,
)
from .sql.rows import select_row


@dataclass
class Denied:
    run: RunModel
    suspension_id: UUID
    reason: str
    fresh: bool = True


@dataclass
class Voted:
    """A vote short of the quorum: recorded, the run still paused at the same revision (202)."""

    run: RunModel
    suspension_id: UUID
    quorum: int
    voters: list[str] = field(default_factory=list)
    fresh: bool = True

    @property
    def votes(self) -> int:
        return len(self.voters)


Decision = Claimed | Denied | Voted


def _check_version(suspension_id: UUID | str, version: Version) -> None:
    if str(version.suspension_id) != str(suspension_id):
        raise InvalidRequest(
            "version.suspension_id must name the approval being decided",
            errors={"version": {"suspension_id": ["Mismatch."]}},
        )


def record_of(t: Locked, version: Version, *, votes: bool = False) -> Approval:
    """The approval record of the pause the version names; with `votes`, `has_votes` says whether any was cast."""
    where = {"suspension_id": version.suspension_id, "run_id": t.run.id}
    record = select_row(Approval, where, flag=("has_votes", ApprovalVote, "suspension_id") if votes else None)
    if record is None:
        raise NotSuspended(f"run {t.run.id} has no approval {version.suspension_id}")
    return record


def check_duties(principal: Principal, record: Approval) -> None:
    """Separation of duties (docs/policies.md, "Quorum and separation of duties"): with `exclude_requester`, whoever
    stored the pause may not decide it.

    The same person counts whatever principal they use: a user, or a token linked to that user.
    An approval floor may demand that only principals of a person decide (floors.check_person).
    """
    floors.check_person(principal, record)
    if not record.exclude_requester:
        return
    same_user = principal.user_id is not None and principal.user_id == record.requester_user_id
    if principal.name == record.requested_by or same_user:
        raise SeparationOfDuties(f"{principal.name} asked for this approval and may not decide it")


def _vote_digest(calls: list[dict[str, Any]], note: str) -> str:
    """Over what the vote approves as values, and its note: the same vote re-indented is the same vote."""
    return hashlib.sha256(digests.canonical({"calls": policies.calls_value(calls), "note": note})).hexdigest()


def _approval_input(calls: list[dict[str, Any]], note: str, approvers: Sequence[str]) -> str:
    # The last voter is `approver`; every voter, in order, is `approvers`.
    body = {
        "decision": "approve",
        "calls": calls,
        "note": note,
        "approver": approvers[-1],
        "approvers": list(approvers),
    }
    return digests.canonical(body).decode()


class DecideDoor(Door[Any]):
    """What the approver's doors share: the approver role and the reason matrix's `decide` row."""

    role = Role.APPROVER
    version: Version

    def admits(self, t: Locked) -> None:
        super().admits(t)
        check_reason(t, self.version, "decide")


@dataclass
class Vote(DecideDoor):
    """A vote to approve, with the approver's edits; the vote that reaches the quorum admits the run (T4).

    Step 3: a version that is no longer current replays the same person's
    identical vote, else the loser's 409; a current one is checked for its
    deadline and duties, and the same person's vote again replays (202) or
    is vote_mismatch. Step 4: a later vote must approve the first vote's calls.
    """

    version: Version
    note: str
    edits: list[dict[str, Any]] | None
    record: Approval | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    votes: list[ApprovalVote] = field(default_factory=list)

    def earlier(self, t: Locked) -> Claimed | Voted | None:
        if not is_current(t, self.version):
            return self.replayed(t)
        assert t.live is not None
        check_deadline(t.live, t.now)
        self.record = record_of(t, self.version, votes=True)
        check_duties(t.principal, self.record)
        self.calls = policies.final_calls(json.loads(t.live.pending), self.edits)
        if self.record.has_votes:  # type: ignore[attr-defined]  # record_of's annotation; a first vote reads none
            self.votes = list(ApprovalVote.objects.filter(suspension_id=t.live.id).order_by("cast_at", "id"))
        mine = next((v for v in self.votes if v.voter_key == t.principal.person), None)
        if mine is None:
            return None
        if mine.digest != _vote_digest(self.calls, self.note):
            raise VoteMismatch("you already voted on this approval, with other calls or another note")
        voters = [v.voter for v in self.votes]
        return Voted(run=t.run, suspension_id=t.live.id, quorum=self.record.quorum, voters=voters, fresh=False)

    def replayed(self, t: Locked) -> Claimed:
        """The approval is no longer open at this version: the same person's identical vote again is a replay."""
        record = Approval.objects.filter(pk=self.version.suspension_id, run_id=t.run.id).first()
        calls = policies.final_calls(json.loads(record.pending), self.edits) if record is not None else []
        own = ApprovalVote.objects.filter(suspension_id=self.version.suspension_id, voter_key=t.principal.person)
        existing = claimed_before(t, self.version)  # 409 for a stale version with nothing to replay
        digest = _vote_digest(calls, self.note)
        mine = own.first()
        if mine is not None and mine.digest == digest:
            return Claimed(run=t.run, admission=existing, fresh=False)
        refuse_claimed(t, existing, digest)  # not this person's identical vote: the loser's 409

    def check(self, t: Locked) -> None:
        if not self.votes:
            return
        first = json.loads(self.votes[0].calls)
        if policies.calls_value(first) != policies.calls_value(self.calls):
            raise VoteMismatch(
                "a vote must approve exactly the calls of the first vote", first_voter=self.votes[0].voter
            )
        self.calls = first  # the same values: the first vote's text is the one admitted

    def write(self, t: Locked) -> Claimed | Voted:
        assert t.live is not None and self.record is not None
        calls_text = digests.canonical(self.calls).decode()
        vote = ApprovalVote(
            suspension_id=t.live.id,
            run_id=t.run.id,
            voter=t.principal.name,
            voter_key=t.principal.person,
            calls=calls_text,
            note=self.note,
            digest=_vote_digest(self.calls, self.note),
            cast_at=t.now,
        )
        vote.stamp_scope(t.run.scope)
        t.writes.insert([vote])
        voters = [v.voter for v in self.votes] + [t.principal.name]
        voted = event(
            t.run,
            "voted",
            t.principal.name,
            t.now,
            suspension_id=str(t.live.id),
            votes=len(voters),
            quorum=self.record.quorum,
        )
        if edited := [c["id"] for c in self.calls if c["edited"]]:
            voted.data["edited"] = edited
        if len(voters) < self.record.quorum:
            write_events(t.writes, voted)
            return Voted(run=t.run, suspension_id=t.live.id, quorum=self.record.quorum, voters=voters)
        return self.approved(t, voters, voted if self.record.quorum > 1 else None, calls_text)

    def approved(self, t: Locked, voters: list[str], voted: Any, calls_text: str) -> Claimed:
        """The deciding vote: T4 with every call's final arguments as the input, the approval resolved."""
        assert t.live is not None
        input_text = _approval_input(self.calls, self.note, voters)
        digest = digests.request_digest(scope=t.run.scope, version=self.version.as_dict(), input=input_text)
        admission, admitted = admit(
            t,
            version=self.version,
            source=AdmissionSource.APPROVAL,
            input_text=input_text,
            request_digest=digest,
            state=AdmissionState.ADMITTED,
        )
        resolve_approval(t, ApprovalStatus.APPROVED, self.note, final_calls=calls_text)
        write_events(t.writes, *([voted] if voted is not None else []), admitted)
        return Claimed(run=t.run, admission=admission, fresh=True)


@metrics.counted_claim("approval")
def approve(
    *,
    principal: Principal,
    suspension_id: UUID | str,
    version: Version,
    note: str = "",
    edits: list[dict[str, Any]] | None = None,
) -> Claimed | Voted:
    """A vote to approve, with the approver's edits; at the quorum, T4 with the final calls as input.

    Locks the run. Refusals, all before the first write: the pause must be
    an approval (403), open at this version (409; the same person's
    identical vote again replays: 200, or 202 while short of the quorum),
    before its deadline (410); separation of duties (403); edits (400, 403
    not_editable, 422 arguments_invalid); a vote on other calls than the
    first vote's, or the same person voting differently (409 vote_mismatch).
    """
    _check_version(suspension_id, version)
    door = Vote(version=version, note=note, edits=edits)
    return through(door, principal=principal, run_id=version.run_id)  # type: ignore[no-any-return]


@dataclass
class Respond(AdmissionDoor):
    """T4 with the approver's words as input instead of the tools; ends the approval whatever its quorum."""

    response: str
    role = Role.APPROVER
    door = "decide"

    def check(self, t: Locked) -> None:
        super().check(t)
        check_duties(t.principal, record_of(t, self.version))

    def write(self, t: Locked) -> Claimed:
        assert t.live is not None
        admission, admitted = self.admit(t, AdmissionSource.APPROVAL)
        resolve_approval(t, ApprovalStatus.RESPONDED, response=self.response)
        write_events(t.writes, admitted, announce={"decision": "respond"})
        return Claimed(run=t.run, admission=admission)


@metrics.counted_claim("respond")
def respond(*, principal: Principal, suspension_id: UUID | str, version: Version, response: str) -> Claimed:
    """T4 with the approver's words as input instead of the tools: the engine resumes its model with them.

    Ends the approval whatever its quorum. Locks the run; the same approver's
    identical response again is a replay (fresh=False).
    """
    _check_version(suspension_id, version)
    if not response.strip():
        raise InvalidRequest("a response needs words", errors={"response": ["A response needs words."]})
    input_text = digests.canonical({"decision": "respond", "response": response, "approver": principal.name}).decode()
    door = Respond(version=version, input_text=input_text, response=response)
    return through(door, principal=principal, run_id=version.run_id)


@dataclass
class Deny(DecideDoor):
    """T6: the run fails with `rejected: <reason>`, the pause is deleted, the approval resolved."""

    version: Version
    reason: str

    def earlier(self, t: Locked) -> Denied | None:
        if is_current(t, self.version):
            return None
        prior = Approval.objects.filter(
            suspension_id=self.version.suspension_id, run_id=t.run.id, status=ApprovalStatus.DENIED
        ).first()
        if prior is not None and prior.decided_by == t.principal.name and prior.note == self.reason:
            return Denied(run=t.run, suspension_id=self.version.suspension_id, reason=self.reason, fresh=False)
        claimed_before(t, self.version)  # raises the loser's refusal when nothing claimed it
        raise NotSuspended(f"pause {self.version.suspension_id} was already decided")

    def check(self, t: Locked) -> None:
        assert t.live is not None
        check_deadline(t.live, t.now)
        check_duties(t.principal, record_of(t, self.version))

    def write(self, t: Locked) -> Denied:
        live, actor = t.live, t.principal.name
        assert live is not None
        t.writes.delete(Suspension, live.pk)
        resolve_approval(t, ApprovalStatus.DENIED, self.reason)
        advance(t, RunState.FAILED, error=f"rejected: {self.reason}")
        write_events(t.writes, event(t.run, "denied", actor, t.now, suspension_id=str(live.id), reason=self.reason))
        return Denied(run=t.run, suspension_id=live.id, reason=self.reason)


@metrics.counted_claim("deny")
def deny_approval(*, principal: Principal, suspension_id: UUID | str, version: Version, reason: str) -> Denied:
    """T6 deny: the run fails with `rejected: <reason>`, the pause is deleted, the approval resolved.

    Locks the run. Ends a quorum approval whatever votes it has. The same
    approver's identical denial again is a replay (fresh=False).
    """
    _check_version(suspension_id, version)
    return through(Deny(version=version, reason=reason), principal=principal, run_id=version.run_id)  # type: ignore[no-any-return]


def decide(
    *,
    principal: Principal,
    suspension_id: UUID | str,
    version: Version,
    decision: str,
    reason: str = "",
    response: str = "",
    calls: list[dict[str, Any]] | None = None,
) -> Decision:
    """The approver's decision, for the API and the console alike: approve (a vote), respond, or deny."""
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
