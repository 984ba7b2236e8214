"""An approver's decision (DESIGN §3 T4/T6, §4, §15): approve (a vote), respond, or deny.

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
from . import attempt_reads, attempts, claims_sql
from .claiming import admit, check_reason, claim, earlier_claim, is_current, replay_or_conflict
from .claims import (
    Claimed,
    Version,
    check_deadline,
    event,
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


def _record(run: RunModel, version: Version, ahead: attempt_reads.VoteRead | None = None) -> Approval:
    """The approval record of the pause the version names: as an attempt's read found it, else read now."""
    record: Approval | None = (
        ahead.record
        if ahead is not None
        else claims_sql.first(Approval, suspension_id=version.suspension_id, run_id=run.id)
    )
    if record is None:
        raise NotSuspended(f"run {run.id} has no approval {version.suspension_id}")
    return record


def check_duties(principal: Principal, record: Approval) -> None:
    """DESIGN §15 separation of duties: with `exclude_requester`, whoever stored the pause may not decide it.

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


def _replay_vote(principal: Principal, run: RunModel, live: Suspension | None, version: Version, digest: str) -> Any:
    """The approval is no longer open at this version: the same person's identical vote again is a replay."""
    own = ApprovalVote.objects.filter(suspension_id=version.suspension_id, voter_key=principal.person).first()
    existing = earlier_claim(run, live, version)  # 409 for a stale version with nothing to replay
    if existing is None:
        raise NotSuspended(f"pause {version.suspension_id} was already decided")
    if own is not None and own.digest == digest:
        return Claimed(run=run, admission=existing, fresh=False)
    replay_or_conflict(run, existing, digest)  # a vote digest never equals a request digest: raises
    raise AssertionError("replay_or_conflict raised")


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

    The vote that reaches the quorum is one guarded statement, or under the
    run lock (attempts.attempted); a vote short of it takes the lock.
    Refusals, all before the first write: the pause must be an approval
    (403), open at this version (409; the same person's identical vote again
    replays: 200, or 202 while short of the quorum), before its deadline
    (410); separation of duties (403); edits (400, 403 not_editable, 422
    arguments_invalid); a vote on other calls than the first vote's, or the
    same person voting differently (409 vote_mismatch).
    """
    _check_version(suspension_id, version)

    def vote() -> Claimed | Voted:
        ahead = attempt_reads.vote_read(principal, version.run_id, version.suspension_id)  # an attempt's one read
        run, live, now = (ahead.run, ahead.live, ahead.now) if ahead else lock_run(principal, version.run_id)
        require(principal, Role.APPROVER, run.scope)
        check_reason(live, version, "decide")
        if not is_current(run, live, version) or live is None:
            record = Approval.objects.filter(pk=version.suspension_id, run_id=run.id).first()
            calls = policies.final_calls(json.loads(record.pending), edits) if record is not None else []
            return _replay_vote(  # type: ignore[no-any-return]
                principal, run, live, version, _vote_digest(calls, note)
            )
        check_deadline(live, now)
        record = _record(run, version, ahead)
        check_duties(principal, record)
        calls = policies.final_calls(json.loads(live.pending), edits)
        digest = _vote_digest(calls, note)
        votes: list[ApprovalVote] = (
            ahead.votes if ahead else claims_sql.select(ApprovalVote, order=("cast_at", "id"), suspension_id=live.id)
        )
        mine = next((v for v in votes if v.voter_key == principal.person), None)
        if mine is not None:
            if mine.digest != digest:
                raise VoteMismatch("you already voted on this approval, with other calls or another note")
            return Voted(
                run=run, suspension_id=live.id, quorum=record.quorum, voters=[v.voter for v in votes], fresh=False
            )
        if votes:
            first = json.loads(votes[0].calls)
            if policies.calls_value(first) != policies.calls_value(calls):
                raise VoteMismatch(
                    "a vote must approve exactly the calls of the first vote", first_voter=votes[0].voter
                )
            calls = first  # the same values: the first vote's text is the one admitted
        calls_text = digests.canonical(calls).decode()
        vote = ApprovalVote(
            suspension_id=live.id,
            run_id=run.id,
            voter=principal.name,
            voter_key=principal.person,
            calls=calls_text,
            note=note,
            digest=digest,
            cast_at=now,
        )
        vote.stamp_scope(run.scope)
        claims_sql.insert([vote])
        voters = [v.voter for v in votes] + [principal.name]
        edited = [c["id"] for c in calls if c["edited"]]
        voted = event(
            run, "voted", principal.name, now, suspension_id=str(live.id), votes=len(voters), quorum=record.quorum
        )
        if edited:
            voted.data["edited"] = edited
        if len(voters) < record.quorum:
            # A vote short of the quorum moves no revision: a guard on the run would not see another vote
            # cast meanwhile (which could have made this one the last), so it is counted under the lock.
            attempts.lock_answers()
            write_events(voted)
            return Voted(run=run, suspension_id=live.id, quorum=record.quorum, voters=voters)
        input_text = _approval_input(calls, note, voters)
        request_digest = digests.request_digest(scope=run.scope, version=version.as_dict(), input=input_text)
        c = admit(
            principal=principal,
            run=run,
            live=live,
            now=now,
            version=version,
            source=AdmissionSource.APPROVAL,
            input_text=input_text,
            request_digest=request_digest,
        )
        resolve_approval(live.id, ApprovalStatus.APPROVED, now, principal.name, note, final_calls=calls_text)
        assert c.admitted is not None
        write_events(*([voted] if record.quorum > 1 else []), c.admitted)
        return Claimed(run=c.run, admission=c.admission, fresh=True)

    return attempts.attempted(vote)


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

    def duties(live: Suspension) -> None:
        check_duties(principal, Approval.objects.get(pk=live.id))

    with claims_sql.transition():
        c = claim(
            principal=principal,
            run_id=version.run_id,
            version=version,
            role=Role.APPROVER,
            door="decide",
            source=AdmissionSource.APPROVAL,
            input_of=lambda live, existing: input_text,
            check=duties,
        )
        if c.fresh:
            assert c.live is not None and c.admitted is not None
            resolve_approval(c.live.id, ApprovalStatus.RESPONDED, c.now, principal.name, response=response)
            write_events(c.admitted, announce={"decision": "respond"})
    return Claimed(run=c.run, admission=c.admission, fresh=c.fresh)


@metrics.counted_claim("deny")
def deny_approval(*, principal: Principal, suspension_id: UUID | str, version: Version, reason: str) -> Denied:
    """T6 deny: the run fails with `rejected: <reason>`, the pause is deleted, the approval resolved.

    Locks the run. Ends a quorum approval whatever votes it has. The same
    approver's identical denial again is a replay (fresh=False).
    """
    _check_version(suspension_id, version)
    with claims_sql.transition():
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
        check_duties(principal, _record(run, version))
        Suspension.objects.filter(pk=live.pk).delete()
        resolve_approval(live.id, ApprovalStatus.DENIED, now, principal.name, reason)
        move(run, RunState.FAILED, now, error=f"rejected: {reason}")
        write_events(event(run, "denied", principal.name, now, suspension_id=str(live.id), reason=reason))
    return Denied(run=run, suspension_id=live.id, reason=reason)


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
