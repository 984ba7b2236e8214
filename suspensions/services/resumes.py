"""The engine's and the bus's claims: T3 one-shot resume, T4 agent-reply admission, T5 start (DESIGN §3-§5)."""

import json
from typing import Any
from uuid import UUID

from ..exceptions import InvalidState, NotFound, ReplyMismatch, ResultsMismatch, ResumeAlreadyStarted, SuspensionExpired
from ..models import Admission, AdmissionSource, AdmissionState, Role, Start, Suspension
from ..observability import metrics
from ..principals import Principal
from . import attempt_reads, attempts, claims_sql
from .claiming import claim
from .claims import Claimed, Version, bounded_input, check_deadline, lock_run, require, write_events, write_start


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


@metrics.counted_claim("one_shot")
def resume_run(*, principal: Principal, run_id: UUID | str, version: Version, results: list[dict[str, Any]]) -> Claimed:
    """T3 one-shot resume of an `external_tool` pause: T4 admit and T5 start in one transaction.

    One guarded statement, or under the run lock (attempts.attempted). The
    identical request again answers the original receipts with fresh=False
    and no continuation, even after the run moved on.
    """
    version.require_run(run_id)
    input_text = bounded_input(results)

    def resume() -> Claimed:
        ordered: list[dict[str, Any]] = []

        def match(live: Suspension) -> None:
            ordered.extend(order_results(json.loads(live.pending), results))

        c = claim(
            principal=principal,
            run_id=run_id,
            version=version,
            role=Role.ENGINE,
            door="one_shot",
            source=AdmissionSource.ONE_SHOT,
            input_of=lambda live, existing: input_text,
            state=AdmissionState.STARTED,
            check=match,
        )
        if not c.fresh:
            start = Start.objects.filter(admission_id=c.admission.id).first()
            return Claimed(run=c.run, admission=c.admission, start=start, fresh=False)
        assert c.live is not None and c.admitted is not None
        start, started = write_start(
            run=c.run, admission=c.admission, suspension=c.live, actor=principal.name, now=c.now
        )
        write_events(c.admitted, started)
        return Claimed(run=c.run, admission=c.admission, start=start, suspension=c.live, results=ordered)

    return attempts.attempted(resume)


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

    def bound_to_question(live: Suspension) -> None:
        if reply_with != live.reply_with:
            raise ReplyMismatch(f"reply_with does not match the pending call's ({live.reply_with!r})")

    with claims_sql.transition():
        c = claim(
            principal=principal,
            run_id=run_id,
            version=version,
            role=Role.BUS,
            door="admit",
            source=source,
            input_of=lambda live, existing: input,
            check=bound_to_question,
        )
        if c.admitted is not None:
            write_events(c.admitted)
    return Claimed(run=c.run, admission=c.admission, fresh=c.fresh)


def _locked(principal: Principal, admission_id: UUID | str) -> attempt_reads.StartRead:
    """Under the run lock: the admission's run locked, its pause and the clock; then the admission and its start."""
    found = claims_sql.admission_run(principal, admission_id)
    if found is None:
        raise NotFound(f"admission {admission_id} not found")
    run, live, now = lock_run(principal, found)
    require(principal, Role.ENGINE, run.scope)
    admission: Admission | None = claims_sql.first(Admission, id=admission_id)
    if admission is None:  # admissions are never deleted: found above, it is still there
        raise NotFound(f"admission {admission_id} not found")
    return attempt_reads.StartRead(run, live, now, admission, claims_sql.first(Start, admission_id=admission.id))


@metrics.counted_claim("start")
def start_admission(*, principal: Principal, admission_id: UUID | str) -> Claimed:
    """T5 start: the single grant to execute an admitted continuation.

    One read (the admission, its run and pause, its start: attempt_reads)
    and one guarded statement, or under the run lock (attempts.attempted),
    which is taken before the admission is read again. Only the fresh start
    carries the suspension; a second start is resume_already_started with the
    start receipt.
    """
    from ..presenters import start_receipt

    def start() -> Claimed:
        read = attempt_reads.start_read(principal, admission_id)  # an attempt's one read
        if read is not None:
            require(principal, Role.ENGINE, read.run.scope)  # (under the lock, _locked checks it before reading on)
        else:
            read = _locked(principal, admission_id)
        run, live, now, admission, start = read.run, read.live, read.now, read.admission, read.start
        if start is not None:
            raise ResumeAlreadyStarted(receipt=start_receipt(start))
        if admission.state == AdmissionState.EXPIRED:
            raise SuspensionExpired(f"admission {admission.id} expired before it was started")
        if admission.state != AdmissionState.ADMITTED or live is None or live.id != admission.suspension_id:
            raise InvalidState(f"admission {admission.id} is {admission.state} and can no longer start")
        check_deadline(live, now)
        claims_sql.set_admission_state(admission.pk, AdmissionState.STARTED)
        admission.state = AdmissionState.STARTED
        begun, started = write_start(run=run, admission=admission, suspension=live, actor=principal.name, now=now)
        write_events(started)
        return Claimed(run=run, admission=admission, start=begun, suspension=live, admission_fresh=False)

    # A start moves no revision: two starts of one admission both pass an attempt's guard, and the second's
    # start row breaks the unique admission key, which drops that attempt to the lock (ResumeAlreadyStarted).
    return attempts.attempted(start)
