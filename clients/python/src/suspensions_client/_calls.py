"""The endpoints of runs, pauses, approvals and admissions, each as one `Call` (docs/api.md §7.2-§7.4).

Each function here is the single description of its endpoint: method, path,
body, how to parse the answer, and what a resend after a lost answer means.
`Client` and `AsyncClient` expose each one as a method of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypedDict, TypeVar, Unpack
from urllib.parse import urlsplit

from ._transport import API_PREFIX, Call, Flow, ask, keyed, segment
from .claims import Admission, Claimed, DecisionResult, Denial, EarlyResult, LatestAdmission, Vote
from .errors import (
    AlreadySuspended,
    ResumeAlreadyStarted,
    StartUncertain,
    SuspensionsError,
    VersionConflict,
    error_from,
)
from .models import JSON, Event, NewRun, Page, Run, Suspension, SuspensionSummary, Version

T = TypeVar("T")


class HasVersion(Protocol):
    @property
    def version(self) -> Version: ...


class HasAdmission(Protocol):
    @property
    def admission(self) -> Admission | None: ...


RunRef = str | Run | Claimed
PauseRef = RunRef | NewRun  # what a pause takes: a run, or one to register with the pause (its first)
VersionRef = Version | HasVersion
AdmissionRef = str | Admission | HasAdmission


class RunFilters(TypedDict, total=False):
    tag: str | Sequence[str]
    state: str
    agent_id: str
    reason: str
    scope: str
    created_after: datetime | str
    created_before: datetime | str
    updated_after: datetime | str
    updated_before: datetime | str
    cursor: str
    page_size: int


class SuspensionFilters(TypedDict, total=False):
    tag: str | Sequence[str]
    reason: str
    agent_id: str
    tool: str
    scope: str
    expires_before: datetime | str
    expires_after: datetime | str
    created_after: datetime | str
    created_before: datetime | str
    reply_with: str
    expiring_within: int
    older_than: int
    at_risk: bool
    cursor: str
    page_size: int


# -- helpers shared by the builders ---------------------------------------------------------


def of(parse: Callable[[JSON], T]) -> Callable[[Any, int], T]:
    return lambda data, status: parse(data)


def page_of(parse: Callable[[JSON], T]) -> Callable[[Any, int], Page[T]]:
    def parse_page(data: Any, status: int) -> Page[T]:
        return Page(
            results=[parse(row) for row in data["results"]], next=data.get("next"), previous=data.get("previous")
        )

    return parse_page


def compact(**fields: Any) -> JSON:
    """The body without the fields left out (None): absent, not null, so the server's defaults apply."""
    return {key: value for key, value in fields.items() if value is not None}


def query(**params: Any) -> dict[str, str | list[str]]:
    """Query parameters as strings; a list (`tag=["a", "b"]`) repeats its parameter."""
    out: dict[str, str | list[str]] = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            out[key] = [str(item) for item in value]
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = value.isoformat() if isinstance(value, datetime) else str(value)
    return out


def run_ref(run: RunRef, revision: int | None) -> tuple[str, int]:
    """(run id, revision): a Run or a Claimed carries its revision; a bare id needs `revision`."""
    if isinstance(run, str):
        if revision is None:
            raise ValueError("give `revision` with a run id (or pass the Run or Claimed itself)")
        return run, revision
    return run.run_id, run.run_revision if revision is None else revision


def version_of(version: VersionRef) -> Version:
    return version if isinstance(version, Version) else version.version


def admission_id(admission: AdmissionRef) -> str:
    if isinstance(admission, str):
        return admission
    if isinstance(admission, Admission):
        return admission.id
    if admission.admission is None:
        raise ValueError("this result carries no admission to start")
    return admission.admission.id


def finished_as(state: str, run_id: str, revision: int) -> Callable[[SuspensionsError], Flow[Run]]:
    """After a resent complete/fail/cancel is refused as stale: the first one did it if the run is there now."""

    def recover(error: SuspensionsError) -> Flow[Run]:
        if isinstance(error, VersionConflict):
            run = yield from ask(get_run(run_id))
            if run.state == state and run.revision == revision + 1:
                return run
        raise error

    return recover


# -- runs -----------------------------------------------------------------------------------


def register(
    agent_id: str,
    *,
    scope: str | None = None,
    session_id: str | None = None,
    tags: Sequence[str] | None = None,
    idempotency_key: str | None = None,
) -> Call[Run]:
    """T1: a new run, `running` at revision 1, with its `tags` (at most 10 of `[a-z0-9._:-]{1,64}`).

    Sent with an `Idempotency-Key` (`idempotency_key`, or a new one), so a
    resend after a lost answer returns the run the first attempt registered.
    """
    body = compact(agent_id=agent_id, scope=scope, session_id=session_id, tags=list(tags) if tags else None)
    return keyed("POST", "/runs", of(Run.from_json), body, idempotency_key=idempotency_key)


def list_runs(**filters: Unpack[RunFilters]) -> Call[Page[Run]]:
    """Runs, newest first; filters as in docs/api.md §9 (`state`, `agent_id`, `scope`, time ranges...)."""
    return Call("GET", "/runs", page_of(Run.from_json), params=query(**filters))


def get_run(run_id: str) -> Call[Run]:
    """One run, with its state, revision, error and live pause id."""
    return Call("GET", f"/runs/{segment(run_id)}", of(Run.from_json))


def wait_run(run_id: str, *, after_revision: int, timeout: int) -> Call[Run]:
    """The run once its revision passes `after_revision`, or as it is after `timeout` seconds (at most 60): a long
    poll the server holds without a thread (docs/api.md, "Waiting without webhooks")."""
    params = query(after_revision=after_revision, timeout=timeout)
    return Call("GET", f"/runs/{segment(run_id)}/wait", of(Run.from_json), params=params)


def list_events(run_id: str, *, cursor: str | None = None, page_size: int | None = None) -> Call[Page[Event]]:
    """The run's audit timeline, oldest first."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", f"/runs/{segment(run_id)}/events", page_of(Event.from_json), params=params)


def suspend(
    run: PauseRef,
    *,
    reason: str,
    pending: Sequence[Mapping[str, Any]],
    continuation: Mapping[str, Any],
    revision: int | None = None,
    ttl_seconds: int | None = None,
    approval: Mapping[str, Any] | None = None,
    engine_version: str | None = None,
    callback: bool | None = None,
    tags: Sequence[str] | None = None,
) -> Call[Suspension]:
    """T2: pause the run. `pending` calls are sent as given (`arguments` a string holding JSON).

    `engine_version` arms the version-drift guard of its resume or start;
    `callback=True` (external_tool pauses) asks for a `callback_url`. An
    external_tool pause whose calls all have early results comes back resumed
    (`Suspension.resume`). `tags`: the pause's own, after its run's (the
    answer's `tags` holds both).

    A `NewRun` as `run` registers it with this pause, its first, in one
    request (`first_pause`). A suspend is not a replay: resent after a lost
    answer it is refused as stale or already paused, and the client then reads
    back the pause the first attempt stored (same reason and pending calls) and
    returns it.
    """
    body = compact(
        reason=reason,
        pending=[dict(call) for call in pending],
        continuation=dict(continuation),
        ttl_seconds=ttl_seconds,
        approval=dict(approval) if approval is not None else None,
        engine_version=engine_version,
        callback=callback,
        tags=list(tags) if tags else None,
    )
    if isinstance(run, NewRun):
        return first_pause(run, body)
    run_id, rev = run_ref(run, revision)
    body = {"revision": rev, **body}

    def recover(error: SuspensionsError) -> Flow[Suspension]:
        if isinstance(error, (VersionConflict, AlreadySuspended)):
            now = yield from ask(get_run(run_id))
            if now.state == "paused" and now.revision == rev + 1 and now.suspension_id:
                stored = yield from ask(get_suspension(now.suspension_id))
                if stored.reason == reason and [c.raw for c in stored.pending] == body["pending"]:
                    return stored
        raise error

    return Call("POST", f"/runs/{segment(run_id)}/suspend", of(Suspension.from_json), body, recover=recover)


def first_pause(run: NewRun, pause: JSON) -> Call[Suspension]:
    """T1 and T2 in one request (docs/api.md, "One call to pause: `POST /runs` with `suspend`"): `POST /runs` with
    the pause's body as `suspend`; the answer's `suspension`, its run paused at `run_revision` 2. Keyed, so a
    resend after a lost answer gets the same run and pause back."""
    tags = list(run.tags) if run.tags else None
    body = compact(agent_id=run.agent_id, scope=run.scope, session_id=run.session_id, tags=tags) | {"suspend": pause}
    parse = of(lambda data: Suspension.from_json(data["suspension"]))
    return keyed("POST", "/runs", parse, body, idempotency_key=run.idempotency_key)


def resume(
    version: VersionRef,
    results: Sequence[Mapping[str, Any]],
    *,
    engine_version: str | None = None,
    accept_drift: bool | None = None,
) -> Call[Claimed]:
    """T3 one-shot resume of an `external_tool` pause: `results` are `{call_id, content}` or `{call_id, error}`.

    A replay (after a lost answer) carries the receipts but no continuation and no results.
    With `engine_version`, a pause stored by another version raises `VersionDrift`
    unless `accept_drift=True`.
    """
    v = version_of(version)
    body = {"version": v.as_json(), "results": [dict(result) for result in results]}
    body |= compact(engine_version=engine_version, accept_drift=accept_drift)
    return Call("POST", f"/runs/{segment(v.run_id)}/resume", of(Claimed.from_json), body)


def resume_by_callback(
    callback_url: str,
    version: VersionRef,
    results: Sequence[Mapping[str, Any]],
    *,
    engine_version: str | None = None,
    accept_drift: bool | None = None,
) -> Call[Claimed]:
    """T3 through a pause's `callback_url` (docs/api.md, "Callback URLs: `POST /callbacks/{token}`"): the one-shot
    resume body, the URL as the capability.

    The server reads no token there (any client of the service's address will
    do); a URL that does not hold raises `NotFound`. Replays as `resume` does.
    """
    v = version_of(version)
    path = urlsplit(callback_url).path.removeprefix(API_PREFIX)
    body = {"version": v.as_json(), "results": [dict(result) for result in results]}
    body |= compact(engine_version=engine_version, accept_drift=accept_drift)
    return Call("POST", path, of(Claimed.from_json), body)


def early_result(run: str | Run, call_id: str, content: Any, *, ttl_seconds: int | None = None) -> Call[EarlyResult]:
    """Keep a tool result that may come before its pause
    (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"); `content` is any JSON.

    When it is the last result a live external_tool pause waits for, that pause
    is resumed at once and the answer's `resume` is the resume's own answer.
    The same result again is a replay (`fresh` false), so a resend is safe.
    """
    run_id = run if isinstance(run, str) else run.id
    body = compact(call_id=call_id, content=content, ttl_seconds=ttl_seconds)
    body["content"] = content  # null is a content like any other
    return Call("POST", f"/runs/{segment(run_id)}/early-results", of(EarlyResult.from_json), body)


def complete(run: RunRef, revision: int | None = None) -> Call[Run]:
    """T8: the run is `completed`. Give the Claimed of the start (its revision) or a run id and revision."""
    run_id, rev = run_ref(run, revision)
    body = {"revision": rev}
    return Call(
        "POST",
        f"/runs/{segment(run_id)}/complete",
        of(Run.from_json),
        body,
        recover=finished_as("completed", run_id, rev),
    )


def fail(run: RunRef, error: str, revision: int | None = None) -> Call[Run]:
    """T8: the run is `failed` with `error`."""
    run_id, rev = run_ref(run, revision)
    body = {"revision": rev, "error": error}
    return Call(
        "POST", f"/runs/{segment(run_id)}/fail", of(Run.from_json), body, recover=finished_as("failed", run_id, rev)
    )


def cancel(run: RunRef, revision: int | None = None) -> Call[Run]:
    """T7: the run is `cancelled` (paused or running)."""
    run_id, rev = run_ref(run, revision)
    body = {"revision": rev}
    return Call(
        "POST",
        f"/runs/{segment(run_id)}/cancel",
        of(Run.from_json),
        body,
        recover=finished_as("cancelled", run_id, rev),
    )


# -- admissions -----------------------------------------------------------------------------


def admit_reply(version: VersionRef, *, input: str, reply_with: str) -> Call[Claimed]:
    """T4 by the bus: admit an agent reply; `input` is a string holding JSON, kept byte for byte."""
    v = version_of(version)
    body = {"version": v.as_json(), "input": input, "reply_with": reply_with}
    return Call("POST", f"/runs/{segment(v.run_id)}/admissions", of(Claimed.from_json), body)


def list_admissions(run_id: str, *, cursor: str | None = None, page_size: int | None = None) -> Call[Page[Admission]]:
    """The run's admissions, oldest first, each with its `state`."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", f"/runs/{segment(run_id)}/admissions", page_of(Admission.from_json), params=params)


def latest_admission(run_id: str) -> Call[LatestAdmission]:
    """The run's latest admission and its start receipt, for recovery (NotFound while it has none)."""
    return Call("GET", f"/runs/{segment(run_id)}/admissions/latest", of(LatestAdmission.from_json))


def admitted_work(
    *, state: str | None = "admitted", scope: str | None = None, cursor: str | None = None, page_size: int | None = None
) -> Call[Page[Admission]]:
    """GET /admissions: the engine's queue of admitted work, oldest first (`state=None` lists every state)."""
    params = query(state=state, scope=scope, cursor=cursor, page_size=page_size)
    return Call("GET", "/admissions", page_of(Admission.from_json), params=params)


def start(
    admission: AdmissionRef, *, engine_version: str | None = None, accept_drift: bool | None = None
) -> Call[Claimed]:
    """T5: the single grant to execute; the fresh answer carries the pause and the admitted input.

    Resent after a lost answer and refused as already started, it raises
    `StartUncertain`: the grant happened and its continuation was in the lost answer.
    With `engine_version`, a pause stored by another version raises `VersionDrift`
    unless `accept_drift=True`.
    """
    body = compact(engine_version=engine_version, accept_drift=accept_drift) or None

    def recover(error: SuspensionsError) -> Flow[Claimed]:
        if isinstance(error, ResumeAlreadyStarted):
            raise StartUncertain(error.status, error.problem, error.headers) from error
        raise error
        yield  # a generator: recover is a flow

    return Call(
        "POST", f"/admissions/{segment(admission_id(admission))}/start", of(Claimed.from_json), body, recover=recover
    )


# -- suspensions and approvals --------------------------------------------------------------


def list_suspensions(**filters: Unpack[SuspensionFilters]) -> Call[Page[SuspensionSummary]]:
    """Live pauses, soonest deadline first; filters as in docs/api.md §9 (`reason`, `tool`, `reply_with`...)."""
    return Call("GET", "/suspensions", page_of(SuspensionSummary.from_json), params=query(**filters))


def get_suspension(suspension_id: str) -> Call[Suspension]:
    """One live pause, with its continuation and the run's revision (its claim `version`)."""
    return Call("GET", f"/suspensions/{segment(suspension_id)}", of(Suspension.from_json))


def list_approvals(**filters: Unpack[SuspensionFilters]) -> Call[Page[SuspensionSummary]]:
    """Pending approvals (approver or auditor), with the filters of `list_suspensions`."""
    return Call("GET", "/approvals", page_of(SuspensionSummary.from_json), params=query(**filters))


def decide(
    suspension_id: str,
    version: VersionRef,
    decision: str = "approve",
    reason: str | None = None,
    response: str | None = None,
    calls: Sequence[Mapping[str, str]] | None = None,
    acting_for: str | None = None,
) -> Call[Claimed | Denial | Vote]:
    """An approver's decision: `approve` (optionally with edited `calls`), `deny` (with a reason) or `respond`.

    Returns the admission (`Claimed`), a `Denial`, or a `Vote` (202) when the
    pause's quorum is not reached yet. `calls` is `[{"id", "arguments"}]`, each
    `arguments` a string holding JSON. `acting_for` (a username) decides for someone
    who named you their delegate (`NotDelegated` otherwise).
    """
    body = compact(
        version=version_of(version).as_json(),
        decision=decision,
        reason=reason,
        response=response,
        calls=[dict(call) for call in calls] if calls is not None else None,
        acting_for=acting_for,
    )
    return Call("POST", f"/approvals/{segment(suspension_id)}/decide", decision_of, body)


def decide_many(items: Sequence[Mapping[str, Any]]) -> Call[list[DecisionResult]]:
    """Up to 100 decisions in one request, each decided as `decide` would decide it, in order.

    Each item is a `decide` body plus its `approval_id`: `{"approval_id", "version", "decision", "reason"?,
    "response"?, "calls"?}` (a `version` may be a pause or a `Version`). Returns one `DecisionResult` per
    item; a refused item carries its error instead of raising it. A malformed list raises `InvalidRequest`
    and decides nothing; the same list again replays what was done.
    """
    body = [{**item, "version": version_json(item["version"])} for item in items]
    return Call("POST", "/approvals/decide", decision_results, {"items": body})


def version_json(version: VersionRef | Mapping[str, Any]) -> Any:
    return dict(version) if isinstance(version, Mapping) else version_of(version).as_json()


def decision_results(data: Any, status: int) -> list[DecisionResult]:
    results = []
    for r in data["results"]:
        ok = 200 <= r["status"] < 300
        results.append(
            DecisionResult(
                approval_id=r["approval_id"],
                status=r["status"],
                decision=decision_of(r["body"], r["status"]) if ok else None,
                error=None if ok else error_from(r["status"], r["body"]),
                raw=r,
            )
        )
    return results


def decision_of(data: Any, status: int) -> Claimed | Denial | Vote:
    if status == 202 or ("votes" in data and "admission" not in data):
        return Vote.from_json(data)
    if data.get("decision") == "deny":
        return Denial.from_json(data)
    return Claimed.from_json(data)
