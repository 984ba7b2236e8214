"""The engine's and the bus's claims: T3 one-shot resume, T4 agent-reply admission, T5 start
(docs/api.md, "2. Lifecycle"; docs/api.md, "3. Who may do what"; docs/api.md, "5. Digests and bounds").

Each is a door of the one claim path (claiming.through).
"""

import json
from dataclasses import dataclass
from typing import Any, Self
from uuid import UUID

from .. import digests
from ..exceptions import InvalidState, NotFound, ReplyMismatch, ResultsMismatch, ResumeAlreadyStarted, SuspensionExpired
from ..models import Admission, AdmissionSource, AdmissionState, Role, Start, Suspension
from ..observability import metrics
from ..principals import Principal
from .claiming import AdmissionDoor, Door, admit, through
from .claims import Claimed, Locked, Version, bounded_input, check_deadline, drift_of, write_events, write_start
from .sql.rows import select_row


def order_results(pending: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results matched one to one with the pending calls, in pending order (422 otherwise)."""
    by_id: dict[str, dict[str, Any]] = {}
    for result in results:
        if result["call_id"] in by_id:
            raise ResultsMismatch(f"call {result['call_id']} has more than one result")
        by_id[result["call_id"]] = result
    expected = [call["id"] for call in pending]
    unknown = sorted(set(by_id) - set(expected))
    missing = [call_id for call_id in expected if call_id not in by_id]
    if unknown or missing:
        raise ResultsMismatch("results do not match the pending calls", unknown=unknown, missing=missing)
    return [by_id[call_id] for call_id in expected]


@dataclass(frozen=True)
class Resumable:
    """What a one-shot resume's checks found: the live pause, the results in pending order, the drift its
    events record (docs/api.md, "Version drift: `engine_version` and `accept_drift`")."""

    live: Suspension
    ordered: list[dict[str, Any]]
    drift: dict[str, Any]


def write_one_shot(t: Locked, found: Resumable, *, version: Version, input_text: str) -> Claimed:
    """T3's writes once every check passed: T4 admit and T5 start of the pause, its results the input.

    Step 5 of the one-shot resume's door, and the resume that early results
    complete, whose checks early.py makes before the first write (services/early.py).
    """
    live, actor = found.live, t.principal.name
    digest = digests.request_digest(scope=t.run.scope, version=version.as_dict(), input=input_text)
    admission, admitted = admit(
        t,
        live,
        version=version,
        source=AdmissionSource.ONE_SHOT,
        input_text=input_text,
        request_digest=digest,
        state=AdmissionState.STARTED,
    )
    start, started = write_start(t=t, suspension=live, admission=admission, actor=actor)
    admitted.data.update(found.drift)
    started.data.update(found.drift)
    write_events(t.writes, admitted, started)
    return Claimed(run=t.run, admission=admission, start=start, suspension=live, results=found.ordered)


@dataclass(frozen=True)
class OneShot(AdmissionDoor[Resumable]):
    """T3: T4 admit and T5 start of an `external_tool` pause, with the results in pending order."""

    results: list[dict[str, Any]]
    # The drift guard (docs/api.md, "Version drift: `engine_version` and `accept_drift`"): not part of the request
    # digest, so a replay is decided on the results alone.
    engine_version: str | None = None
    accept_drift: bool = False
    role = Role.ENGINE
    door = "one_shot"

    @classmethod
    def asked(cls, version: Version, results: list[dict[str, Any]], **more: Any) -> Self:
        """The door of one resume body: the results and their retained input (413 past the bound), and `more`."""
        return cls(version=version, input_text=bounded_input(results), results=results, **more)

    def replayed(self, t: Locked, existing: Admission) -> Claimed:
        start = Start.objects.filter(admission_id=existing.id).first()
        return Claimed(run=t.run, admission=existing, start=start, fresh=False)

    def check(self, t: Locked, live: Suspension) -> Resumable:
        check_deadline(live, t.now)
        drift = drift_of(live, self.engine_version, self.accept_drift)
        return Resumable(live, order_results(json.loads(live.pending), self.results), drift)

    def write(self, t: Locked, found: Resumable) -> Claimed:
        return write_one_shot(t, found, version=self.version, input_text=self.input_text)


@metrics.counted_claim("one_shot")
def resume_run(
    *,
    principal: Principal,
    run_id: UUID | str,
    version: Version,
    results: list[dict[str, Any]],
    engine_version: str | None = None,
    accept_drift: bool = False,
) -> Claimed:
    """T3 one-shot resume of an `external_tool` pause: T4 admit and T5 start in one transaction.

    Locks the run. The identical request again answers the original receipts
    with fresh=False and no continuation, even after the run moved on; a
    version drift (docs/api.md, "Version drift: `engine_version` and `accept_drift`") is refused unless `accept_drift`.
    """
    version.require_run(run_id)
    door = OneShot.asked(version, results, engine_version=engine_version, accept_drift=accept_drift)
    return through(door, principal=principal, run_id=run_id)


@dataclass(frozen=True)
class AgentReply(AdmissionDoor[Suspension]):
    """T4 by the bus: the reply bound to the pending call's `reply_with`; grants no execution."""

    reply_with: str
    source: str
    role = Role.BUS
    door = "admit"

    def check(self, t: Locked, live: Suspension) -> Suspension:
        check_deadline(live, t.now)
        if self.reply_with != live.reply_with:
            raise ReplyMismatch(f"reply_with does not match the pending call's ({live.reply_with!r})")
        return live

    def write(self, t: Locked, live: Suspension) -> Claimed:
        admission, admitted = self.admit(t, live, self.source)
        write_events(t.writes, admitted)
        return Claimed(run=t.run, admission=admission)


@metrics.counted_claim("agent_reply")
def admit_reply(
    *,
    principal: Principal,
    run_id: UUID | str,
    version: Version,
    input: str,
    reply_with: str,
    source: str = AdmissionSource.AGENT_REPLY,
) -> Claimed:
    """T4 admit an agent reply (bus): claims the pause, binds the exact input; grants no execution.

    Locks the run. The identical request again answers the original receipt
    (fresh=False); a different one is admission_conflict naming both digests.
    """
    version.require_run(run_id)
    bounded_input(input)  # the bound measures the input's JSON encoding; the text itself is kept byte for byte
    door = AgentReply(version=version, input_text=input, reply_with=reply_with, source=source)
    return through(door, principal=principal, run_id=run_id)


@dataclass(frozen=True)
class Granted:
    """What a start's checks found: the admission it starts, its pause, and the drift its event records."""

    admission: Admission
    live: Suspension
    drift: dict[str, Any]


@dataclass(frozen=True)
class StartDoor(Door[tuple[Admission, Suspension], Granted, Claimed]):
    """T5: the single grant to execute an admitted continuation. A start moves no revision.

    Step 3 has no replay: the admission, read after the lock, is current
    while it is admitted and its pause live; a second start is refused with
    the first one's receipt.
    """

    admission_id: UUID | str
    engine_version: str | None = None
    accept_drift: bool = False
    role = Role.ENGINE

    def earlier(self, t: Locked) -> tuple[Admission, Suspension]:
        from ..presenters import start_receipt

        # The admission, and whether it was started, in one read; the start itself only to refuse with its receipt.
        admission = select_row(Admission, {"id": self.admission_id}, flag=("has_start", Start, "admission_id"))
        if admission is None:  # admissions are never deleted: the lock found its run, so it is there
            raise NotFound(f"admission {self.admission_id} not found")
        if admission.has_start:  # type: ignore[attr-defined]  # (select_row sets it)
            raise ResumeAlreadyStarted(receipt=start_receipt(Start.objects.get(admission_id=admission.id)))
        if admission.state == AdmissionState.EXPIRED:
            raise SuspensionExpired(f"admission {admission.id} expired before it was started")
        if admission.state != AdmissionState.ADMITTED or t.live is None or t.live.id != admission.suspension_id:
            raise InvalidState(f"admission {admission.id} is {admission.state} and can no longer start")
        return admission, t.live

    def check(self, t: Locked, current: tuple[Admission, Suspension]) -> Granted:
        admission, live = current
        check_deadline(live, t.now)
        return Granted(admission, live, drift_of(live, self.engine_version, self.accept_drift))

    def write(self, t: Locked, found: Granted) -> Claimed:
        admission, live = found.admission, found.live
        t.writes.update(Admission, {"id": admission.pk}, state=AdmissionState.STARTED)
        admission.state = AdmissionState.STARTED
        start, started = write_start(t=t, suspension=live, admission=admission, actor=t.principal.name)
        started.data.update(found.drift)
        write_events(t.writes, started)
        return Claimed(run=t.run, admission=admission, start=start, suspension=live, admission_fresh=False)


@metrics.counted_claim("start")
def start_admission(
    *, principal: Principal, admission_id: UUID | str, engine_version: str | None = None, accept_drift: bool = False
) -> Claimed:
    """T5 start: the single grant to execute an admitted continuation.

    Locks the admission's run, found in the lock's own statement (404
    outside the principal's scopes), then reads the admission. Only the fresh start carries
    the suspension; a second start is resume_already_started with the start receipt.
    A version drift (docs/api.md, "Version drift: `engine_version` and `accept_drift`") is refused unless
    `accept_drift`.
    """
    door = StartDoor(admission_id=admission_id, engine_version=engine_version, accept_drift=accept_drift)
    return through(door, principal=principal, admission_id=admission_id)
