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
    Event,
    Role,
    RunState,
    Suspension,
)
from ..models import Run as RunModel
from ..observability import metrics
from ..principals import Principal
from .claiming import (
    AdmissionDoor,
    Door,
    Replay,
    admit,
    check_reason,
    claimed_before,
    current_pause,
    refuse_claimed,
    through,
)
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


@dataclass(frozen=True)
class Open:
    """Step 3 of a vote on an open approval: its live pause, its record, and the votes cast on it so far."""

    live: Suspension
    record: Approval
    votes: list[ApprovalVote]


@dataclass(frozen=True)
class Ballot:
    """What a vote's checks found: the open approval, and the calls the vote approves (the first vote's text)."""

    live: Suspension
    record: Approval
    votes: list[ApprovalVote]
    calls: list[dict[str, Any]]


@dataclass(frozen=True)
class Vote(Door[Open, Ballot, Claimed | Voted]):
    """A vote to approve, with the approver's edits; the vote that reaches the quorum admits the run (T4).

    Step 3: a version that is no longer current replays the same person's
    identical vote, else the loser's 409. A current one is open until its
    deadline (410 after: the sweeper's); a vote moves no revision, so the
    same person's vote again is its replay too (202), or vote_mismatch when
    it is another. Step 4: duties, the edits, and a later vote must approve
    the first vote's calls.
    """

    version: Version
    note: str
    edits: list[dict[str, Any]] | None
    role = Role.APPROVER

    def admits(self, t: Locked) -> None:
        super().admits(t)
        check_reason(t, self.version, "decide")

    def earlier(self, t: Locked) -> Replay[Claimed | Voted] | Open:
        live = current_pause(t, self.version)
        if live is None:
            return Replay(self.replayed(t))
        check_deadline(live, t.now)
        record = record_of(t, self.version, votes=True)
        votes = []
        if record.has_votes:  # type: ignore[attr-defined]  # record_of's annotation; a first vote reads none
            votes = list(ApprovalVote.objects.filter(suspension_id=live.id).order_by("cast_at", "id"))
        mine = next((v for v in votes if v.voter_key == t.principal.person), None)
        if mine is None:
            return Open(live, record, votes)
        # A stored vote is not permission: its replay goes only to someone who may decide now, as step 4 says.
        check_duties(t.principal, record)
        if mine.digest != _vote_digest(policies.final_calls(json.loads(live.pending), self.edits), self.note):
            raise VoteMismatch("you already voted on this approval, with other calls or another note")
        voters = [v.voter for v in votes]
        return Replay(Voted(run=t.run, suspension_id=live.id, quorum=record.quorum, voters=voters, fresh=False))

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

    def check(self, t: Locked, current: Open) -> Ballot:
        check_duties(t.principal, current.record)
        calls = policies.final_calls(json.loads(current.live.pending), self.edits)
        if current.votes:
            first = json.loads(current.votes[0].calls)
            if policies.calls_value(first) != policies.calls_value(calls):
                raise VoteMismatch(
                    "a vote must approve exactly the calls of the first vote", first_voter=current.votes[0].voter
                )
            calls = first  # the same values: the first vote's text is the one admitted
        return Ballot(current.live, current.record, current.votes, calls)

    def write(self, t: Locked, ballot: Ballot) -> Claimed | Voted:
        live, quorum = ballot.live, ballot.record.quorum
        calls_text = digests.canonical(ballot.calls).decode()
        vote = ApprovalVote(
            suspension_id=live.id,
            run_id=t.run.id,
            voter=t.principal.name,
            voter_key=t.principal.person,
            calls=calls_text,
            note=self.note,
            digest=_vote_digest(ballot.calls, self.note),
            cast_at=t.now,
        )
        vote.stamp_scope(t.run.scope)
        t.writes.insert([vote])
        voters = [v.voter for v in ballot.votes] + [t.principal.name]
        voted = event(
            t.run, "voted", t.principal.name, t.now, suspension_id=str(live.id), votes=len(voters), quorum=quorum
        )
        if edited := [c["id"] for c in ballot.calls if c["edited"]]:
            voted.data["edited"] = edited
        if len(voters) < quorum:
            write_events(t.writes, voted)
            return Voted(run=t.run, suspension_id=live.id, quorum=quorum, voters=voters)
        return self.approved(t, ballot, voters, voted if quorum > 1 else None, calls_text)

    def approved(self, t: Locked, ballot: Ballot, voters: list[str], voted: Event | None, calls_text: str) -> Claimed:
        """The deciding vote: T4 with every call's final arguments as the input, the approval resolved."""
        input_text = _approval_input(ballot.calls, self.note, voters)
        digest = digests.request_digest(scope=t.run.scope, version=self.version.as_dict(), input=input_text)
        admission, admitted = admit(
            t,
            ballot.live,
            version=self.version,
            source=AdmissionSource.APPROVAL,
            input_text=input_text,
            request_digest=digest,
            state=AdmissionState.ADMITTED,
        )
        resolve_approval(t, ballot.live, ApprovalStatus.APPROVED, self.note, final_calls=calls_text)
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
    return through(Vote(version=version, note=note, edits=edits), principal=principal, run_id=version.run_id)


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
    _check_version(suspension_id, version)
    if not response.strip():
        raise InvalidRequest("a response needs words", errors={"response": ["A response needs words."]})
    input_text = digests.canonical({"decision": "respond", "response": response, "approver": principal.name}).decode()
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
        if prior is not None and prior.decided_by == t.principal.name and prior.note == self.reason:
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
        write_events(t.writes, event(t.run, "denied", actor, t.now, suspension_id=str(live.id), reason=self.reason))
        return Denied(run=t.run, suspension_id=live.id, reason=self.reason)


@metrics.counted_claim("deny")
def deny_approval(*, principal: Principal, suspension_id: UUID | str, version: Version, reason: str) -> Denied:
    """T6 deny: the run fails with `rejected: <reason>`, the pause is deleted, the approval resolved.

    Locks the run. Ends a quorum approval whatever votes it has. The same
    approver's identical denial again is a replay (fresh=False).
    """
    _check_version(suspension_id, version)
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
