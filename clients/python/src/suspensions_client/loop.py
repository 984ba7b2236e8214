"""Helpers for the engine loop (docs/api.md, "10. Python client"): pause for approval or for tool results, then start
and complete.

    pause = client.pause_for_approval(run, calls, continuation, ttl_seconds=3600)
    outcome = client.wait_for_admission(pause.run_id, pause.id, timeout=3600, poll_interval=5)
    if outcome.admitted:
        started = client.start(outcome)            # the continuation and the approver's decision
        ...                                        # execute the approved calls
        client.complete(started)
    else:
        print(outcome.status, outcome.reason)      # denied, expired, cancelled...: the run has ended

For tools whose results may come back before the pause is stored
(docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"):

    client.early_result(run, "c1", {"rows": 1})   # from wherever the tool's result arrives
    pause = client.pause_for_tools(run, calls, cont, engine_version="engine-2.4.1")
    if pause.resume is not None:                    # every call was answered early: resumed already
        ...                                         # go on from pause.resume.results

A wait always ends with an `Outcome` (or `WaitTimeout` past its own
`timeout`): a denial fails the run, and the wait returns at once with
`status == "denied"` and the approver's reason, never hangs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._calls import PauseRef, get_run, latest_admission, list_admissions, suspend, wait_run
from ._transport import Call, Flow, Wait, ask
from .claims import Admission
from .errors import ClientError, NotFound
from .inbox import Inbox
from .models import PendingCall, Run, Suspension

DENIED_PREFIX = "rejected: "


class WaitTimeout(ClientError, TimeoutError):
    """The pause was still waiting when the caller's own `timeout` passed (the pause itself is unchanged)."""

    def __init__(self, run_id: str, suspension_id: str, timeout: float) -> None:
        super().__init__(f"run {run_id} is still paused on {suspension_id} after {timeout} s")
        self.run_id, self.suspension_id, self.timeout = run_id, suspension_id, timeout


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How a pause ended, as read from the API when the wait returned.

    `status` is `admitted` (waiting for this engine's start), `denied`, or the
    admission's or run's state otherwise: `started` (another worker started
    it), `done`, `expired`, `cancelled`, `closed`, `failed`, `completed`,
    `incomplete`.
    """

    status: str
    run: Run
    admission: Admission | None = None

    @property
    def admitted(self) -> bool:
        return self.status == "admitted"

    @property
    def reason(self) -> str:
        """The approver's reason for a denial; otherwise the run's error (empty when none)."""
        return self.run.error.removeprefix(DENIED_PREFIX) if self.status == "denied" else self.run.error


def pending_call(call: PendingCall | Mapping[str, Any]) -> dict[str, Any]:
    """A pending call for the wire; `arguments` given as an object are encoded to the JSON string it must be."""
    if isinstance(call, PendingCall):
        out: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": call.arguments}
        if call.arguments_schema is not None:
            out["arguments_schema"] = call.arguments_schema
        if call.editable:
            out["editable"] = True
        return out
    out = dict(call)
    if not isinstance(out.get("arguments"), str):
        out["arguments"] = json.dumps(out.get("arguments", {}), ensure_ascii=False, allow_nan=False)
    return out


def pause_for_approval(
    run: PauseRef,
    calls: Sequence[PendingCall | Mapping[str, Any]],
    continuation: Mapping[str, Any],
    *,
    ttl_seconds: int | None = None,
    approval: Mapping[str, Any] | None = None,
    revision: int | None = None,
    engine_version: str | None = None,
    tags: Sequence[str] | None = None,
) -> Call[Suspension]:
    """Pause the run until an approver decides on `calls` (T2 with reason `approval`).

    `calls` are `{id, name, arguments}` (arguments as a JSON string or an
    object), optionally with `arguments_schema` and `editable`; `approval` is
    the policy `{quorum, exclude_requester, on_expiry}`. `run` is the Run (or
    the Claimed of the last start), whose revision it uses, or for a run's
    first pause a `NewRun`: registered with the pause in one request. `engine_version`:
    a start from another version then raises `VersionDrift` unless it accepts it.
    """
    options = {"ttl_seconds": ttl_seconds, "approval": approval, "engine_version": engine_version, "tags": tags}
    return paused("approval", run, calls, continuation, revision=revision, **options)


def pause_for_tools(
    run: PauseRef,
    calls: Sequence[PendingCall | Mapping[str, Any]],
    continuation: Mapping[str, Any],
    *,
    ttl_seconds: int | None = None,
    revision: int | None = None,
    engine_version: str | None = None,
    callback: bool | None = None,
    tags: Sequence[str] | None = None,
) -> Call[Suspension]:
    """Pause the run until the results of `calls` come back (T2 with reason `external_tool`).

    `run` as in `pause_for_approval`: a Run, a Claimed, or a `NewRun` for its first pause.

    Results already kept with `early_result` resume the pause at once when
    they answer every call: `pause.resume` is then the one-shot resume's
    answer (continuation and results in pending order), and the run is
    running at `pause.resume.run_revision`. Otherwise resume it with
    `resume(pause, results)`, or let the last `early_result` do it.
    `callback=True` gives `pause.callback_url`, which a third party may POST
    the resume body to without a token. `engine_version` arms the drift guard.
    """
    options = {"ttl_seconds": ttl_seconds, "engine_version": engine_version, "callback": callback, "tags": tags}
    return paused("external_tool", run, calls, continuation, revision=revision, **options)


def paused(
    reason: str,
    run: PauseRef,
    calls: Sequence[PendingCall | Mapping[str, Any]],
    continuation: Mapping[str, Any],
    **options: Any,
) -> Call[Suspension]:
    """The loop helpers' suspend: `calls` for the wire (`pending_call`), the rest as `suspend` takes it."""
    return suspend(run, reason=reason, pending=[pending_call(c) for c in calls], continuation=continuation, **options)


# Each long poll asks the server to hold it at most this long: below the client's default HTTP timeout (30 s).
LONG_POLL_SECONDS = 20


def wait_for_admission(
    run_id: str,
    suspension_id: str,
    *,
    timeout: float = 3600.0,
    poll_interval: float = 2.0,
    inbox: Inbox | None = None,
) -> Flow[Outcome]:
    """Wait until the pause is answered: admitted, denied, expired or cancelled.

    Without an `inbox`, long-polls the run (`GET /runs/{id}/wait`): the server
    answers as soon as the run moves, so the decision arrives within
    milliseconds, with one request per `LONG_POLL_SECONDS` while nothing
    happens. A server without that endpoint (older than it) is polled every
    `poll_interval` seconds instead. With an `inbox` fed by the webhook
    receiver it polls every `poll_interval` seconds and wakes as soon as an
    event of the run arrives (then a long `poll_interval` is only the safety
    net). A vote short of quorum keeps the run paused: the wait goes on.
    Raises `WaitTimeout` after `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    long_poll = inbox is None
    seen = inbox.count(run_id) if inbox is not None else 0
    run = yield from ask(get_run(run_id))
    while True:
        if not (run.state == "paused" and run.suspension_id == suspension_id):
            return (yield from outcome_of(run, suspension_id))
        left = deadline - time.monotonic()
        if left <= 0:
            raise WaitTimeout(run_id, suspension_id, timeout)
        if long_poll:
            seconds = max(1, min(LONG_POLL_SECONDS, int(left)))
            try:
                run = yield from ask(wait_run(run_id, after_revision=run.revision, timeout=seconds))
                continue
            except NotFound:
                long_poll = False  # no such endpoint here (or the run is gone: the next read says which)
        else:
            yield Wait(inbox, run_id, seen, min(poll_interval, left))
        seen = inbox.count(run_id) if inbox is not None else 0
        run = yield from ask(get_run(run_id))


def outcome_of(run: Run, suspension_id: str) -> Flow[Outcome]:
    """The pause is answered: its admission if there is one (approve, respond, reply), else how the run ended."""
    try:
        latest: Admission | None = yield from ask(latest_admission(run.id))
    except NotFound:
        latest = None
    admission = latest if latest is not None and latest.suspension_id == suspension_id else None
    if admission is None and latest is not None:
        # The run was admitted and paused again since: look for this pause's admission further back.
        admission = yield from find_admission(run.id, suspension_id)
    if admission is not None:
        return Outcome(status=admission.state or "admitted", run=run, admission=admission)
    denied = run.state == "failed" and run.error.startswith(DENIED_PREFIX)
    return Outcome(status="denied" if denied else run.state, run=run)


def find_admission(run_id: str, suspension_id: str) -> Flow[Admission | None]:
    cursor: str | None = None
    while True:
        page = yield from ask(list_admissions(run_id, cursor=cursor, page_size=200))
        for admission in page.results:
            if admission.suspension_id == suspension_id:
                return admission
        cursor = page.next_cursor
        if cursor is None:
            return None
