"""OpenAI Agents SDK tool approvals as pauses of the suspensions service (clients/python/README.md).

A function tool with `needs_approval` stops `Runner.run` with
`result.interruptions`. `pause_for_approval` stores them as the pause's
pending calls, with the SDK's own serialised `RunState` as the continuation
(`prepared`, base64 of `RunState.to_string()`), so the process may exit.
Any later process rebuilds the run from the service alone:

    result = await Runner.run(agent, "refund order 42")
    if result.interruptions:
        pause = openai_agents.pause_for_approval(client, run, result)  # then this process may exit
    # any process, any time later, from the run and pause ids alone:
    resumed = await openai_agents.wait_and_resume(client, agent, run_id, pause_id)
    result = await Runner.run(agent, resumed.state)  # the tool runs only if it was approved
    if resumed.started is not None:  # approved or answered in words: the run goes on in the service
        client.complete(run_id, revision=resumed.started.run_revision)

The process that resumes should be waiting before a denial: a denial
deletes the pause (the run fails), so only a copy read before it lets the
model read the rejection (`wait_and_resume` reads it first).

An approval runs each call with the arguments the approver finally approved
(an editable call may have been edited); a denial or a response in words
rejects every call, and the model reads the approver's reason (or words) as
the tool's output, the SDK's own rejection.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents import Agent, FunctionTool, RunResult, RunState, Tool
from agents.items import ToolApprovalItem

from .._calls import PauseRef
from ..claims import Claimed
from ..client import Client
from ..errors import ClientError, NotFound
from ..loop import Outcome
from ..models import Suspension

FRAMEWORK = "openai-agents"
DENIED = "The approver denied this tool call: {reason}"
RESPONDED = "The approver answered instead of running this tool: {response}"


class NothingToResume(ClientError):
    """The pause ended in a way that leaves no run state to resume; `outcome` says how."""

    def __init__(self, outcome: Outcome, why: str) -> None:
        super().__init__(f"run {outcome.run.id} ended {outcome.status}: nothing to resume ({why})")
        self.outcome = outcome


@dataclass(frozen=True)
class Resumed:
    """A rebuilt run state with the decision applied; `started` is the start's answer when it was approved."""

    state: RunState[Any, Agent[Any]]
    decision: str
    started: Claimed | None = None


def pending_calls(
    interruptions: Sequence[ToolApprovalItem], *, editable: bool = False, tools: Sequence[Tool] = ()
) -> list[dict[str, Any]]:
    """Each function-tool approval as a pending call `{id, name, arguments}` (the model's call id and JSON text).

    `editable` lets an approver edit the arguments; the matching function
    tool's own parameter schema (from `tools`) then bounds the edit, so the
    tool never receives arguments its signature refuses.
    """
    schemas = {tool.name: tool.params_json_schema for tool in tools if isinstance(tool, FunctionTool)}
    calls = []
    for item in interruptions:
        raw = _raw(item)
        call: dict[str, Any] = {"id": raw["call_id"], "name": item.tool_name or raw["name"]}
        call["arguments"] = raw.get("arguments") or "{}"
        if editable:
            call["editable"] = True
            if call["name"] in schemas:
                call["arguments_schema"] = schemas[call["name"]]
        calls.append(call)
    return calls


def continuation(result: RunResult, agent: Agent[Any], *, session_id: str = "") -> dict[str, Any]:
    """The pause's continuation: the SDK's serialised run state, plus the conversation for the approver to read."""
    state = result.to_state()
    asked = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in pending_calls(result.interruptions)
    ]
    messages: list[dict[str, Any]] = []
    if isinstance(result.input, str):
        messages.append({"role": "user", "content": result.input})
    messages.append({"role": "assistant", "content": None, "tool_calls": asked})
    model = agent.model if isinstance(agent.model, str) else type(agent.model).__name__ if agent.model else ""
    return {
        "messages": messages,
        "system_prompt": agent.instructions if isinstance(agent.instructions, str) else "",
        "step_index": len(result.raw_responses),
        "tokens_used": result.context_wrapper.usage.total_tokens,
        "new_messages_from": 0,
        "session_id": session_id,
        "config": {"model": model, "tools": [tool.name for tool in agent.tools if tool.name]},
        "prepared": base64.b64encode(state.to_string().encode()).decode(),
        "provenance": {"framework": FRAMEWORK, "prepared": "RunState.to_string()"},
    }


def pause_for_approval(
    client: Client,
    run: PauseRef,
    result: RunResult,
    agent: Agent[Any] | None = None,
    *,
    editable: bool = False,
    session_id: str = "",
    ttl_seconds: int | None = None,
    approval: Mapping[str, Any] | None = None,
    revision: int | None = None,
) -> Suspension:
    """Pause `run` on the result's interruptions; after this the process holding `result` may exit.

    `run` is the Run (or the Claimed of its last start), or for its first pause a `NewRun`: registered with the
    pause in one request."""
    if not result.interruptions:
        raise ValueError("the result has no interruptions: nothing asks for approval")
    agent = agent or result.last_agent
    calls = pending_calls(result.interruptions, editable=editable, tools=agent.tools)
    body = continuation(result, agent, session_id=session_id)
    return client.pause_for_approval(run, calls, body, ttl_seconds=ttl_seconds, approval=approval, revision=revision)


async def wait_and_resume(
    client: Client, agent: Agent[Any], run_id: str, suspension_id: str, *, timeout: float = 3600.0, poll: float = 2.0
) -> Resumed:
    """Read the pause, wait for its decision, then `resume`: the usual way for a process that did not pause the run.

    The pause is read before the wait because a denial deletes it (the run
    fails): what this process read is then the only copy of the run state,
    and the model still gets to read the rejection. The wait blocks the
    event loop (the client is synchronous), as a process that only waits may.
    """
    pause = read_pause(client, suspension_id)
    outcome = client.wait_for_admission(run_id, suspension_id, timeout=timeout, poll_interval=poll)
    return await resume(client, agent, outcome, pause)


def read_pause(client: Client, suspension_id: str) -> Suspension | None:
    """The pause with its continuation, or None once it is decided (an admission's start still carries it)."""
    try:
        return client.get_suspension(suspension_id)
    except NotFound:
        return None


async def resume(client: Client, agent: Agent[Any], outcome: Outcome, pause: Suspension | None = None) -> Resumed:
    """Rebuild the run state from the service and apply the decision; starts the admission when there is one.

    `outcome` is what `client.wait_for_admission` returned. Admitted: the
    admission is started (exactly once, service-wide) and its calls are
    approved with their final arguments, or rejected with the approver's
    words after `respond`. Denied: every call of `pause` (read before the
    denial deleted it) is rejected with the reason. Raises `NothingToResume`
    otherwise (expired, cancelled, started by another worker, or denied
    with no copy of the pause).
    """
    if outcome.admitted:
        started = client.start(outcome)
        if started.suspension is None:
            raise NothingToResume(outcome, "its start carried no pause")
        decision = started.input_json()
        state = await restore(agent, started.suspension.continuation, decision)
        return Resumed(state=state, decision=decision["decision"], started=started)
    if outcome.status == "denied" and pause is not None:
        state = await restore(agent, pause.continuation, {"decision": "deny", "reason": outcome.reason})
        return Resumed(state=state, decision="deny")
    if outcome.status == "denied":
        raise NothingToResume(outcome, "the denial deleted the pause before this process read it")
    raise NothingToResume(outcome, "it was not admitted")


async def restore(agent: Agent[Any], continuation: Mapping[str, Any], decision: Mapping[str, Any]) -> RunState:
    """The run state from a continuation this module stored, with `decision` (the admitted input) applied."""
    text = base64.b64decode(continuation["prepared"]).decode()
    if decision["decision"] == "approve":
        text = _with_arguments(text, {call["id"]: call["arguments"] for call in decision["calls"] if call["edited"]})
    state = await RunState.from_string(agent, text)
    for item in state.get_interruptions():
        if decision["decision"] == "approve":
            state.approve(item)
        elif decision["decision"] == "respond":
            state.reject(item, rejection_message=RESPONDED.format(response=decision["response"]))
        else:
            state.reject(item, rejection_message=DENIED.format(reason=decision.get("reason", "")))
    return state


def _with_arguments(text: str, edited: Mapping[str, str]) -> str:
    """The serialised state with the approver's edited arguments in every copy of those calls.

    The SDK remembers each call's fingerprint (of its arguments) to refuse a
    reused call id; an edited call gets a fresh record rather than a mismatch.
    """
    if not edited:
        return text
    data = json.loads(text)
    _replace_arguments(data, edited)
    invocations = (data.get("context") or {}).get("tool_invocations") or {}
    for call_id in edited:
        invocations.pop(call_id, None)
    return json.dumps(data)


def _replace_arguments(node: Any, edited: Mapping[str, str]) -> None:
    if isinstance(node, list):
        for child in node:
            _replace_arguments(child, edited)
    elif isinstance(node, dict):
        if node.get("type") == "function_call" and node.get("call_id") in edited and "arguments" in node:
            node["arguments"] = edited[node["call_id"]]
        for child in node.values():
            _replace_arguments(child, edited)


def _raw(item: ToolApprovalItem) -> dict[str, Any]:
    raw = item.raw_item
    data = raw if isinstance(raw, dict) else raw.model_dump(exclude_unset=True)
    if data.get("type") != "function_call":
        raise ValueError(f"only function-tool approvals become pending calls, not {data.get('type')!r}")
    return data
