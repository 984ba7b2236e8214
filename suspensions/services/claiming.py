"""The one claim path: every transition of an existing run goes through `through(door)`
(docs/exactly-once.md, "3. `through`: the five steps, in one transaction").

The sequence, in this order, for every door (one-shot resume, approve and
its votes, respond, deny, agent reply, dispatch, start, suspend, complete,
fail, cancel, closure, keeping an early result):

1. lock the run, its live pause and the clock (`claims.lock_run`);
2. check the actor (`door.admits`): the role in the run's scope and, for a
   claiming door, the reason it may answer (docs/api.md, "3. Who may do what");
3. current or replay (`door.earlier`): a request for what the run is now
   goes on with what step 3 found (a claim: the live pause); the same
   request as an earlier one gets that one's answer again (`Replay`);
   anything else is refused (409, 410);
4. the door's own refusals (`door.check(t, current)`): deadline, duties,
   bounds; it returns what the writes need;
5. the writes (`door.write(t, found)`): the fenced move (`claims.advance`),
   the rows, the events and their outbox rows (`claims.write_events`).

Every refusal is raised before the first write, so a refused request leaves
no trace. The sweep (T9) is the one batch form of the same sequence:
services/sweep.py locks runs `SKIP LOCKED`, re-reads them, keeps the rows
still current, and writes each batch set-based. A register (T1) has no run
to lock: runs.register_run inserts it; a register with its first pause
hands the new run to `through` as `new`.

How a door is written. A door is a frozen dataclass holding only its
request, with a `role` and the three steps; a step's parameters are all it
needs, and what it finds it returns (never a field, never `t`: `Locked` is
frozen too):

    @dataclass(frozen=True)
    class Extend(Door[Suspension, datetime, Run]):  # step 3 finds the pause; step 4 the new deadline
        version: Version
        seconds: int
        role = Role.ENGINE

        def earlier(self, t: Locked) -> Replay[Run] | Suspension:
            live = current_pause(t, self.version)
            if live is None:
                raise VersionConflict(...)  # or return Replay(answer) for the identical request again
            return live

        def check(self, t: Locked, live: Suspension) -> datetime:
            check_deadline(live, t.now)
            return live.expires_at + timedelta(seconds=self.seconds)  # refuse past a bound here

        def write(self, t: Locked, expires_at: datetime) -> Run:
            ...  # t.writes.update(...), claims.advance(t, ...), write_events(t.writes, event(...))
            return t.run

    def extend(*, principal, version, seconds) -> Run:
        return through(Extend(version, seconds), principal=principal, run_id=version.run_id)

A claiming door (it admits the pause its version names, with an input)
subclasses `AdmissionDoor`, whose step 3 is the replay by request digest,
and writes only `check` (the deadline first) and `write`. One claim may
follow from another in the same transaction: the one-shot resume that early
results complete is written by the one-shot resume's own step 5
(`resumes.write_one_shot`), called with the checks early.py made before the
first write; no door is driven outside `through`.
"""

from dataclasses import dataclass
from typing import ClassVar, Generic, NoReturn, TypeVar
from uuid import UUID

from django.db import transaction

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
from ..models import Admission, AdmissionState, Event, Reason, RunState, Suspension
from ..observability.tracing import claim_span
from ..principals import Principal
from .claims import (
    Claimed,
    Locked,
    Version,
    acting,
    advance,
    check_swept,
    event,
    lock_run,
    require,
    suspension_digest_of,
)

A = TypeVar("A")  # a door's answer
C = TypeVar("C")  # what its step 3 found current
F = TypeVar("F")  # what its step 4 found

# docs/api.md, "3. Who may do what": who may answer which reason, by door. The dispatch door has no row:
# a flow wait's nonce and decision token are its gate.
REFUSALS: dict[tuple[str, str], type[Exception]] = {
    (Reason.APPROVAL, "one_shot"): RequiresApproval,
    (Reason.AGENT_REPLY, "one_shot"): AgentReplyOnly,
    (Reason.EXTERNAL_TOOL, "decide"): NotAnApproval,
    (Reason.AGENT_REPLY, "decide"): NotAnApproval,
    (Reason.EXTERNAL_TOOL, "admit"): NotAnAgentReply,
    (Reason.APPROVAL, "admit"): NotAnAgentReply,
}


@dataclass(frozen=True)
class Replay(Generic[A]):
    """Step 3's answer to a request made before: that request's answer again, and nothing is written."""

    answer: A


class Door(Generic[C, F, A]):
    """One transition's own steps; `through` runs them in the one order. A subclass is a frozen dataclass
    holding only its request: what a step finds, it returns, and the next step takes it as its parameter.

    C: what step 3 found current (for a claim, the live pause); F: what step 4 found; A: the answer.
    """

    role: ClassVar[str]

    def begin(self) -> None:
        """Before the lock, inside the transaction (closure: its lock and statement timeouts)."""

    def admits(self, t: Locked) -> None:
        """Step 2, the actor: the role in the run's scope."""
        require(t.principal, self.role, t.run.scope)

    def earlier(self, t: Locked) -> Replay[A] | C:
        """Step 3: what the request goes on with when it is for what the run is now; a replay of an earlier
        identical request; or raise the refusal."""
        raise NotImplementedError

    def check(self, t: Locked, current: C) -> F:
        """Step 4: the door's own refusals; returns what step 5 writes with."""
        raise NotImplementedError

    def write(self, t: Locked, found: F) -> A:
        """Step 5: the writes, the events and their outbox rows."""
        raise NotImplementedError


@claim_span  # the transaction as one span of the request's trace (docs/deploy.md, "Traces")
def through(
    door: Door[C, F, A],
    *,
    principal: Principal,
    run_id: UUID | str | None = None,
    admission_id: UUID | str | None = None,
    new: Locked | None = None,
) -> A:
    """The one claim path: lock, actor, current-or-replay, checks, writes, in one transaction.

    The run is named by its id, or (a start) by one of its admissions: the lock finds it. Or it is `new`:
    a run the caller's transaction has just inserted (runs.register_and_pause), which no other transaction
    can see, so step 1 has nothing to lock or read; its writes join the caller's and go in the same round
    trip, and a refusal rolls back the caller's whole transaction (no savepoint).
    """
    with transaction.atomic(savepoint=new is None):
        door.begin()
        t = new or lock_run(principal, run_id, admission_id=admission_id)  # 1. the lock
        door.admits(t)  # 2. the actor
        current = door.earlier(t)  # 3. current or replay
        if isinstance(current, Replay):
            return current.answer
        found = door.check(t, current)  # 4. the door's own refusals
        answer = door.write(t, found)  # 5. the writes, events, outbox rows
        t.writes.send()
        return answer


# -- what the claiming doors share ---------------------------------------------------------------


def check_reason(t: Locked, version: Version, door: str) -> None:
    """docs/api.md, "3. Who may do what" for the pause the version names: the run's own doors refuse a flow wait too."""
    live = t.live
    if live is None or live.id != version.suspension_id:
        return
    if live.correlation_id:
        raise WrongGate("this wait is resumed only by its correlation id, through the dispatch door")
    refusal = REFUSALS.get((live.reason, door))
    if refusal is not None:
        raise refusal()


def current_pause(t: Locked, version: Version) -> Suspension | None:
    """The run's live pause when the version names it at the current revision (it may be claimed now); else None."""
    run, live = t.run, t.live
    if run.state != RunState.PAUSED or live is None or live.id != version.suspension_id:
        return None
    return live if run.revision == version.run_revision else None


def claimed_before(t: Locked, version: Version) -> Admission:
    """For a version that is not current: the admission that claimed its pause, or the loser's 409.

    A claim against a pause that was already replaced (ABA) is a version conflict.
    """
    run, live = t.run, t.live
    existing = Admission.objects.filter(run_id=run.id, suspension_id=version.suspension_id).first()
    if existing is not None:
        return existing
    if run.state == RunState.PAUSED:
        if live is not None and live.id == version.suspension_id:
            raise VersionConflict(f"run {run.id} is at revision {run.revision}, not {version.run_revision}")
        raise VersionConflict(f"run {run.id} is at revision {run.revision} on another pause")
    # Past its deadline whether or not the sweep has run: the same 410 as check_deadline's.
    check_swept(run, revision=version.run_revision, suspension_id=version.suspension_id)
    # The loser of a race: the pause is gone and nothing it could replay exists.
    raise NotSuspended(f"run {run.id} is {run.state}, not paused on {version.suspension_id}")


def replay_or_conflict(t: Locked, existing: Admission, request_digest: str) -> None:
    """Raise unless `existing` is the identical request (then the caller replays it)."""
    if existing.request_digest != request_digest:
        refuse_claimed(t, existing, request_digest)


def refuse_claimed(t: Locked, existing: Admission, request_digest: str) -> NoReturn:
    """The refusal of a request that is not the one `existing` admitted (409): an admission conflict naming both
    digests while the run is still at the claim's revision, a version conflict once it has moved on."""
    if t.run.revision == existing.claimed_revision:
        raise AdmissionConflict(
            "this pause was already claimed by a different request",
            request_digest=request_digest,
            admitted_digest=existing.request_digest,
        )
    raise VersionConflict(f"the pause was claimed and run {t.run.id} has moved on to revision {t.run.revision}")


def admit(
    t: Locked, live: Suspension, *, version: Version, source: str, input_text: str, request_digest: str, state: str
) -> tuple[Admission, Event]:
    """T4's writes once every check passed: the run moves to `running`, the admission row of `live`; its unsaved
    event."""
    suspension_digest = suspension_digest_of(live)
    advance(t, RunState.RUNNING)
    admission = Admission(
        run_id=t.run.id,
        suspension_id=live.id,
        source=source,
        state=state,
        input=input_text,
        request_digest=request_digest,
        suspension_digest=suspension_digest,
        version_revision=version.run_revision,
        claimed_revision=t.run.revision,
        actor=t.principal.name,
        admitted_at=t.now,
    )
    admission.stamp_scope(t.run.scope)
    t.writes.insert([admission])
    admitted = event(
        t.run,
        "admitted",
        t.principal.name,
        t.now,
        suspension_id=str(live.id),
        admission_id=str(admission.id),
        source=source,
        request_digest=request_digest,
        **acting(t.principal),
    )
    return admission, admitted


@dataclass(frozen=True)
class AdmissionDoor(Door[Suspension, F, Claimed]):
    """A door that claims a pause by its version with an input (T4): one-shot, agent reply, dispatch, respond.

    Every one holds the version it claims and the input it binds (its first
    two fields; a subclass's own fields follow). Step 3 is the same for all:
    the current version goes on with the live pause it names; otherwise the
    admission that claimed it is replayed for the identical request (its
    request digest), and anything else is the loser's 409. Each subclass's
    step 4 takes that pause and spells out its checks, the deadline first.
    """

    version: Version
    input_text: str
    door: ClassVar[str | None]  # the row of the reason matrix; None: the dispatch door, gated before the lock

    def admits(self, t: Locked) -> None:
        super().admits(t)
        if self.door is not None:
            check_reason(t, self.version, self.door)

    def request_digest(self, t: Locked) -> str:
        return digests.request_digest(scope=t.run.scope, version=self.version.as_dict(), input=self.input_text)

    def earlier(self, t: Locked) -> Replay[Claimed] | Suspension:
        live = current_pause(t, self.version)
        if live is not None:
            return live
        existing = claimed_before(t, self.version)
        replay_or_conflict(t, existing, self.request_digest(t))
        return Replay(self.replayed(t, existing))

    def replayed(self, t: Locked, existing: Admission) -> Claimed:
        """The answer to the identical request again: its admission, not fresh."""
        return Claimed(run=t.run, admission=existing, fresh=False)

    def admit(
        self, t: Locked, live: Suspension, source: str, state: str = AdmissionState.ADMITTED
    ) -> tuple[Admission, Event]:
        digest = self.request_digest(t)
        return admit(
            t, live, version=self.version, source=source, input_text=self.input_text, request_digest=digest, state=state
        )
