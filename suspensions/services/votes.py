"""An approve is a vote (docs/policies.md, "Quorum and separation of duties"): one `ApprovalVote` per distinct
person; the vote that reaches the approval's quorum admits the run (T4) in the same transaction, with every call's
final arguments as its input, and a vote short of it changes no revision, so the version the voters saw stays
valid. `decide` (services/approvals.py) calls `approve` for an approve.
"""

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from .. import digests, policies
from ..exceptions import VoteMismatch
from ..models import (
    AdmissionSource,
    AdmissionState,
    Approval,
    ApprovalStatus,
    ApprovalVote,
    Event,
    Role,
    Suspension,
)
from ..models import Run as RunModel
from ..observability import metrics
from ..principals import Principal
from .approval_checks import check_duties, check_version, record_of
from .claiming import Door, Replay, admit, check_reason, claimed_before, current_pause, refuse_claimed, through
from .claims import Claimed, Locked, Version, acting, check_deadline, event, resolve_approval, write_events


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


def _vote_digest(calls: list[dict[str, Any]], note: str) -> str:
    """Over what the vote approves as values, and its note: the same vote re-indented is the same vote."""
    return hashlib.sha256(digests.canonical({"calls": policies.calls_value(calls), "note": note})).hexdigest()


def _approval_input(calls: list[dict[str, Any]], note: str, approvers: Sequence[str], acting_for: str | None) -> str:
    # The last voter is `approver`; every voter, in order, is `approvers`.
    body = {
        "decision": "approve",
        "calls": calls,
        "note": note,
        "approver": approvers[-1],
        "approvers": list(approvers),
    }
    if acting_for:  # the deciding vote was a delegate's (docs/identity.md, "Delegation")
        body["acting_for"] = acting_for
    return digests.canonical(body).decode()


def _already(principal: Principal, mine: ApprovalVote) -> str:
    """The refusal of a second, different vote by one person: theirs, or their delegate's for them."""
    if mine.voter == principal.name and mine.acting_for == (principal.acting_for or ""):
        return "you already voted on this approval, with other calls or another note"
    if principal.acting_for:
        who = f"{principal.acting_for}, whom you act for,"
    else:
        who = "you"
    return f"{who} already voted on this approval (cast by {mine.voter}), with other calls or another note"


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
            raise VoteMismatch(_already(t.principal, mine))
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
            acting_for=t.principal.acting_for or "",
            calls=calls_text,
            note=self.note,
            digest=_vote_digest(ballot.calls, self.note),
            cast_at=t.now,
        )
        vote.stamp_scope(t.run.scope)
        t.writes.insert([vote])
        voters = [v.voter for v in ballot.votes] + [t.principal.name]
        voted = event(
            t.run,
            "voted",
            t.principal.name,
            t.now,
            suspension_id=str(live.id),
            votes=len(voters),
            quorum=quorum,
            **acting(t.principal),
        )
        if edited := [c["id"] for c in ballot.calls if c["edited"]]:
            voted.data["edited"] = edited
        if len(voters) < quorum:
            write_events(t.writes, voted)
            return Voted(run=t.run, suspension_id=live.id, quorum=quorum, voters=voters)
        return self.approved(t, ballot, voters, voted if quorum > 1 else None, calls_text)

    def approved(self, t: Locked, ballot: Ballot, voters: list[str], voted: Event | None, calls_text: str) -> Claimed:
        """The deciding vote: T4 with every call's final arguments as the input, the approval resolved."""
        input_text = _approval_input(ballot.calls, self.note, voters, t.principal.acting_for)
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
    check_version(suspension_id, version)
    return through(Vote(version=version, note=note, edits=edits), principal=principal, run_id=version.run_id)
