"""A tool-node gate for LangGraph: `interrupt()` becomes a pause, the approver's decision `Command(resume=...)`.

    builder.add_node("tools", approval_node([send_refund]))        # instead of ToolNode
    step = pause_graph(client, builder, NewRun("agent"), {"messages": [...]})  # until the gate interrupts: pauses
    ...                                                             # this process may exit now
    step = resume_graph(client, builder, run_id, suspension_id)     # a new process: waits, then resumes the graph

The pause holds the pending tool calls (id, name, arguments as the model
wrote them) and, as its continuation, the graph's messages plus the graph's
own checkpoint (`prepared`: LangGraph's serializer, base64) so any process
can resume from the service alone. The decision comes back as the gate's
`interrupt()` value: approve runs the calls as finally approved (an approver
may edit editable arguments); deny, expiry or cancel answers each call with
an error `ToolMessage` (what ToolNode gives the model when a tool fails);
respond answers each call with the approver's words.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage, convert_to_openai_messages
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt

from ..claims import Claimed
from ..client import Client
from ..errors import ClientError, NotFound, ResumeAlreadyStarted, StartUncertain
from ..loop import Outcome
from ..models import NewRun, Run, Suspension

Tool = Callable[..., Any]
SERDE = JsonPlusSerializer()
REFUSALS = frozenset({"denied", "expired", "cancelled"})  # ends of a pause the graph still hears as the tool's answer


@dataclass(frozen=True)
class Step:
    """Where the graph stopped: `suspension` when it paused (again), else its final `state`.

    `revision` is the run's revision to pass to the next suspend or complete;
    `outcome` is how the pause ended (None on the first run), `approved` whether
    its calls ran.
    """

    state: dict[str, Any]
    revision: int
    suspension: Suspension | None = None
    outcome: Outcome | None = None

    @property
    def approved(self) -> bool:
        return self.outcome is not None and self.outcome.admitted


class CheckpointGone(ClientError):
    """The pause ended without an admission before this process read it: no checkpoint is left to resume."""


def tool_name(tool: Tool) -> str:
    return str(getattr(tool, "name", None) or tool.__name__)


def approval_node(
    tools: Sequence[Tool], *, messages_key: str = "messages", editable: bool = False
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A graph node that asks for approval of the last AI message's tool calls, then answers them.

    `tools` are plain functions (called with the arguments as keywords) or
    LangChain tools (`.invoke(arguments)`); `editable` lets the approver edit
    the arguments.
    """
    by_name = {tool_name(tool): tool for tool in tools}

    def gate(state: Mapping[str, Any]) -> dict[str, Any]:
        asked: AIMessage = state[messages_key][-1]
        calls = [pending_of(call, editable) for call in asked.tool_calls]
        decision = interrupt({"calls": calls})
        return {messages_key: answers(decision, calls, by_name)}

    return gate


def pending_of(call: Mapping[str, Any], editable: bool) -> dict[str, Any]:
    pending = {"id": call["id"], "name": call["name"], "arguments": json.dumps(call["args"], ensure_ascii=False)}
    return {**pending, "editable": True} if editable else pending


def answers(decision: Mapping[str, Any], calls: list[dict[str, Any]], tools: Mapping[str, Tool]) -> list[ToolMessage]:
    """The tool messages for the decision the gate was resumed with."""
    if decision["decision"] == "approve":
        # The calls as finally approved: an approver may have edited editable arguments.
        return [run_tool(tools, call) for call in decision["calls"]]
    if decision["decision"] == "respond":
        return [ToolMessage(decision["response"], tool_call_id=c["id"], name=c["name"]) for c in calls]
    refusal = f"not approved ({decision.get('status', decision['decision'])}): {decision.get('reason', '')}"
    return [ToolMessage(refusal, tool_call_id=c["id"], name=c["name"], status="error") for c in calls]


def run_tool(tools: Mapping[str, Tool], call: Mapping[str, str]) -> ToolMessage:
    tool, arguments = tools[call["name"]], json.loads(call["arguments"])
    result = tool.invoke(arguments) if hasattr(tool, "invoke") else tool(**arguments)
    content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return ToolMessage(content, tool_call_id=call["id"], name=call["name"])


def pause_graph(
    client: Client,
    builder: StateGraph[Any],
    run: Run | NewRun,
    graph_input: Mapping[str, Any],
    *,
    ttl_seconds: int | None = None,
    approval: Mapping[str, Any] | None = None,
    messages_key: str = "messages",
) -> Step:
    """Run the graph from its input until it ends or its gate interrupts; an interrupt pauses `run`.

    A `NewRun` is registered by its first pause, in the same request: a graph
    that ends without interrupting then registers nothing (its step has no
    suspension and no run to complete). Its thread is its `session_id`, or a new id.
    """
    thread_id = run.id if isinstance(run, Run) else run.session_id or str(uuid.uuid4())
    thread: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    saver = InMemorySaver()
    output = builder.compile(checkpointer=saver).invoke(dict(graph_input), thread)
    options = {"ttl_seconds": ttl_seconds, "approval": approval, "messages_key": messages_key}
    revision = run.revision if isinstance(run, Run) else 1
    return settle(client, saver, run, revision, output, thread_id=thread_id, **options)


def settle(
    client: Client,
    saver: InMemorySaver,
    run: str | Run | NewRun,
    revision: int,
    output: dict[str, Any],
    *,
    thread_id: str,
    **options: Any,
) -> Step:
    """Pause the run if the graph interrupted at the gate, with its checkpoint as the continuation."""
    interrupts = output.pop("__interrupt__", None)
    if not interrupts:
        return Step(state=output, revision=revision)
    messages_key = options.pop("messages_key")
    continuation = continuation_of(saver, thread_id, output[messages_key])
    calls = interrupts[0].value["calls"]
    ref = run.id if isinstance(run, Run) else run
    pause = client.pause_for_approval(ref, calls, continuation, revision=revision, **options)
    return Step(state=output, revision=pause.run_revision or revision, suspension=pause)


def continuation_of(saver: InMemorySaver, thread_id: str, messages: list[Any]) -> dict[str, Any]:
    """The service's continuation: the messages for people and tools, the LangGraph checkpoint to resume from."""
    found = saver.get_tuple({"configurable": {"thread_id": thread_id}})
    assert found is not None  # the graph has just checkpointed its interrupt
    snapshot = {"checkpoint": found.checkpoint, "metadata": found.metadata, "writes": found.pending_writes or []}
    kind, blob = SERDE.dumps_typed(snapshot)
    history = convert_to_openai_messages(messages)
    return {
        "messages": [m if m.get("content") is not None else {**m, "content": ""} for m in history],
        "system_prompt": "",
        "step_index": len(messages),
        "tokens_used": 0,
        "new_messages_from": 0,
        "session_id": thread_id,
        "config": {},
        "prepared": base64.b64encode(blob).decode("ascii"),
        "provenance": {"langgraph": {"serializer": kind, "checkpoint_id": found.checkpoint["id"]}},
    }


def restore(continuation: Mapping[str, Any], thread_id: str) -> InMemorySaver:
    """A fresh checkpointer holding the checkpoint kept in the pause, with its pending writes (the interrupt)."""
    kind = continuation["provenance"]["langgraph"]["serializer"]
    snapshot = SERDE.loads_typed((kind, base64.b64decode(continuation["prepared"])))
    saver = InMemorySaver()
    checkpoint = snapshot["checkpoint"]
    where: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    config = saver.put(where, checkpoint, snapshot["metadata"], checkpoint["channel_versions"])
    for task_id, channel, value in snapshot["writes"]:
        saver.put_writes(config, [(channel, value)], task_id)
    return saver


def resume_graph(
    client: Client,
    builder: StateGraph[Any],
    run_id: str,
    suspension_id: str,
    *,
    timeout: float = 3600.0,
    poll_interval: float = 2.0,
    messages_key: str = "messages",
    on_wait: Callable[[], None] | None = None,
) -> Step:
    """Wait for the decision on the pause, then resume the graph from the checkpoint the pause holds.

    Needs nothing of the process that paused. The checkpoint is read while the
    pause is live (a deny leaves nothing to start), and from the start of an
    admitted pause. Approve and respond start the admission; the run's revision
    in the step is the start's. After a deny the run has already failed: the
    graph still hears the refusal, and the step is not `approved`.

    `on_wait` is called once the live pause is read, just before waiting: the
    moment to tell someone the decision can be made. A deny decided before that
    read leaves this process no checkpoint to resume from (CheckpointGone).
    """
    try:
        live: Suspension | None = client.get_suspension(suspension_id)
    except NotFound:
        live = None  # decided already: an admitted pause still hands its continuation to the start
    if on_wait is not None:
        on_wait()
    outcome = client.wait_for_admission(run_id, suspension_id, timeout=timeout, poll_interval=poll_interval)
    started = start_first(client, outcome)
    pause = started.suspension if started is not None else live if outcome.status in REFUSALS else None
    if pause is None:
        # Started by another process (or ended before this one read the pause): nothing is this process's to run.
        raise CheckpointGone(f"pause {suspension_id} is {outcome.status}, not this process's to resume")
    revision = started.run_revision if started is not None else outcome.run.revision
    saver = restore(pause.continuation, run_id)
    graph = builder.compile(checkpointer=saver)
    resume: Command[Any] = Command(resume=decision_of(outcome, started))
    output = graph.invoke(resume, {"configurable": {"thread_id": run_id}})
    if started is None:
        return Step(state=output, revision=revision, outcome=outcome)  # the run has ended: no pause again
    step = settle(client, saver, run_id, revision, output, thread_id=run_id, messages_key=messages_key)
    return Step(state=step.state, revision=step.revision, suspension=step.suspension, outcome=outcome)


def start_first(client: Client, outcome: Outcome) -> Claimed | None:
    """Start the admitted pause; None when it was not admitted or another process started it first."""
    if not outcome.admitted:
        return None
    try:
        return client.start(outcome)
    except StartUncertain:
        raise  # this process's own start was granted and its answer lost: an operator must close it
    except ResumeAlreadyStarted:
        return None  # another process won the start and runs the calls


def decision_of(outcome: Outcome, started: Claimed | None) -> dict[str, Any]:
    """The gate's resume value: the approver's admitted input, or why the pause ended without one."""
    if started is not None:
        decision: dict[str, Any] = started.input_json()
        return decision
    return {"decision": "deny", "status": outcome.status, "reason": outcome.reason}
