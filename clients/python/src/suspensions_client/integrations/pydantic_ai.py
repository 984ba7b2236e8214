"""PydanticAI's deferred tools gated by the suspensions service (clients/python/README.md).

    pip install ./clients/python[pydantic-ai]

A tool that needs approval (`requires_approval=True`, or one that raises
`ApprovalRequired`) ends the agent's run with `DeferredToolRequests` when the
agent's `output_type` includes it. `pause` turns those requests into a pause:
each call a pending call with its arguments, the run's messages (PydanticAI's
own serialised form) as the continuation. The process may then exit.

    result = agent.run_sync("refund order 42")
    if isinstance(result.output, DeferredToolRequests):
        pause(client, run, result.output, result.all_messages())

Any later process resumes from the service alone: `resume` reads the pause,
waits for the decision and hands back the messages and the decision as
`DeferredToolResults` (`ToolApproved`, with the approver's edited arguments
as `override_args`; `ToolDenied` with the approver's reason for a denial).
A denial ends the run, and the service then keeps no continuation: for the
model to read a denial, the resuming process must read the pause before the
decision (`resume` does when started first, or pass it `live_pause`'s read).

    back = resume(client, run_id)
    result = agent.run_sync(message_history=back.messages, deferred_tool_results=back.results)
    if back.started is not None:
        client.complete(back.started)   # or pause again with `back.started` as the run

An approver's `respond` becomes `ToolDenied(response)`: the tool does not
run, and the model reads the approver's words as the call's answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse

from .._calls import PauseRef
from ..claims import Claimed
from ..client import Client
from ..errors import NotFound
from ..inbox import Inbox
from ..loop import Outcome
from ..models import PendingCall, Suspension

KEY = "pydantic_ai"
"""The key of each continuation message that holds PydanticAI's own serialised message."""


class NotAPydanticAIPause(ValueError):
    """The pause's continuation was not written by `pause` (its messages hold no PydanticAI message)."""


def pending_calls(requests: DeferredToolRequests, *, editable: bool = False) -> list[dict[str, Any]]:
    """The approval requests as pending calls: the model's tool call id, tool name and arguments (JSON text)."""
    if requests.calls:
        # External calls are answered with results, not a decision: they belong to a resume, not an approval.
        names = ", ".join(call.tool_name for call in requests.calls)
        raise ValueError(f"only approval requests can be paused for approval, not external calls ({names})")
    if not requests.approvals:
        raise ValueError("the DeferredToolRequests hold no approval request")
    calls: list[dict[str, Any]] = [
        {"id": c.tool_call_id, "name": c.tool_name, "arguments": c.args_as_json_str()} for c in requests.approvals
    ]
    if editable:
        for call in calls:
            call["editable"] = True
    return calls


def to_continuation(
    messages: Sequence[ModelMessage],
    *,
    system_prompt: str = "",
    session_id: str = "",
    new_messages_from: int = 0,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The run's messages as a continuation: each one readable (`role`, `content`), PydanticAI's form under `KEY`."""
    dumped = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    tokens = sum(m.usage.total_tokens for m in messages if isinstance(m, ModelResponse))
    return {
        "messages": [readable(message, raw) for message, raw in zip(messages, dumped, strict=True)],
        "system_prompt": system_prompt,
        "step_index": sum(isinstance(m, ModelResponse) for m in messages),
        "tokens_used": tokens,
        "new_messages_from": new_messages_from,
        "session_id": session_id,
        "config": dict(config or {}),
    }


def readable(message: ModelMessage, raw: dict[str, Any]) -> dict[str, Any]:
    """One continuation message: the text a person reads in the console, and the framework's own message."""
    if isinstance(message, ModelRequest):
        texts = [p.content for p in message.parts if p.part_kind == "user-prompt" and isinstance(p.content, str)]
        role = "user"
    else:
        texts = [p.content for p in message.parts if p.part_kind == "text"]
        role = "assistant"
    return {"role": role, "content": "\n".join(texts) if texts else None, KEY: raw}


def from_continuation(continuation: Mapping[str, Any]) -> list[ModelMessage]:
    """The messages `to_continuation` stored, as PydanticAI's objects again."""
    messages = continuation.get("messages") or []
    if not messages or any(not isinstance(m, dict) or KEY not in m for m in messages):
        raise NotAPydanticAIPause("the continuation's messages hold no PydanticAI messages")
    return ModelMessagesTypeAdapter.validate_python([m[KEY] for m in messages])


def pause(
    client: Client,
    run: PauseRef,
    requests: DeferredToolRequests,
    messages: Sequence[ModelMessage],
    *,
    editable: bool = False,
    ttl_seconds: int | None = None,
    approval: Mapping[str, Any] | None = None,
    **continuation: Any,
) -> Suspension:
    """Pause `run` for approval of the deferred calls; `continuation` takes `to_continuation`'s keywords.

    `run` is the Run (or the Claimed of its last start), or for its first pause a `NewRun`: registered with the
    pause in one request."""
    calls = pending_calls(requests, editable=editable)
    return client.pause_for_approval(
        run, calls, to_continuation(messages, **continuation), ttl_seconds=ttl_seconds, approval=approval
    )


@dataclass(frozen=True, kw_only=True)
class Resumption:
    """A decided pause, ready for `agent.run_sync(message_history=messages, deferred_tool_results=results)`.

    `status` is the `Outcome`'s (`admitted`, `denied`, `expired`, ...). `started`
    is the start grant when admitted: complete the run with it (or pause
    again); otherwise the run has already ended in the service and `results`
    deny every call with `reason`.
    """

    outcome: Outcome
    messages: list[ModelMessage]
    results: DeferredToolResults
    started: Claimed | None = None

    @property
    def status(self) -> str:
        return self.outcome.status

    @property
    def reason(self) -> str:
        return self.outcome.reason


def live_pause(client: Client, run_id: str) -> Suspension | None:
    """The run's pause with its continuation while it is live; None once decided (or when the run is not paused).

    Read it before the decision when a denial must reach the model: a denial
    ends the run, and the service keeps no continuation of an ended run.
    """
    run = client.get_run(run_id)
    if run.suspension_id is None:
        return None
    try:
        return client.get_suspension(run.suspension_id)
    except NotFound:  # admitted (or ended) since the run was read
        return None


def resume(
    client: Client,
    run_id: str,
    *,
    paused: Suspension | None = None,
    timeout: float = 3600.0,
    poll_interval: float = 2.0,
    inbox: Inbox | None = None,
) -> Resumption:
    """Wait for the decision on the run's pause and turn it into PydanticAI's deferred results.

    `paused` is the pause as `live_pause` read it (read here when not given).
    An admitted pause is started: the start hands back the continuation and
    the decision. Any other end denies every call, the model reading why.
    """
    paused = paused or live_pause(client, run_id)
    suspension_id = paused.id if paused is not None else client.get_run(run_id).suspension_id
    if suspension_id is None:
        raise ValueError(f"run {run_id} is not paused: nothing to resume from")
    outcome = client.wait_for_admission(
        run_id, suspension_id, timeout=timeout, poll_interval=poll_interval, inbox=inbox
    )
    if not outcome.admitted:
        if paused is None:
            raise ValueError(f"run {run_id}'s pause ended ({outcome.status}) before its continuation was read")
        denied = deny_all(paused.pending, ToolDenied(denial_message(outcome)))
        return Resumption(outcome=outcome, messages=from_continuation(paused.continuation), results=denied)
    started = client.start(outcome)
    if started.suspension is None:  # a replayed start carries no continuation: another process holds this grant
        raise ValueError(f"run {run_id}'s admission was already started elsewhere")
    results = results_of(started.input_json(), started.suspension.pending)
    messages = from_continuation(started.suspension.continuation)
    return Resumption(outcome=outcome, messages=messages, results=results, started=started)


def denial_message(outcome: Outcome) -> str:
    """What the model reads for a call that did not run: the approver's reason, or how the pause ended."""
    if outcome.status == "denied":
        return outcome.reason or "The tool call was denied."
    return f"The tool call was not approved: the approval ended as {outcome.status}."


def deny_all(pending: Sequence[PendingCall], denial: ToolDenied) -> DeferredToolResults:
    return DeferredToolResults(approvals={call.id: denial for call in pending})


def results_of(decision: Mapping[str, Any], pending: Sequence[PendingCall]) -> DeferredToolResults:
    """The admitted decision as deferred results: each approved call, with the approver's edit if any."""
    if decision.get("decision") == "respond":
        return deny_all(pending, ToolDenied(str(decision.get("response", ""))))
    approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
    for call in decision.get("calls", []):
        edited = json.loads(call["arguments"]) if call.get("edited") else None
        approvals[call["id"]] = ToolApproved(override_args=edited)
    return DeferredToolResults(approvals=approvals)
