"""A LangGraph graph whose tool node pauses in the suspensions service for approval, and resumes on the decision.

    make install                              # the dev set has langgraph (or: pip install ./clients/python[langgraph])
    make run                                  # prints an API token
    export SUSPENSIONS_URL=http://127.0.0.1:8000 SUSPENSIONS_TOKEN=sus_...
    .venv/bin/python examples/langgraph_tool_gate.py [--approve-with-token TOKEN]

    # or across two processes: the first pauses and exits, the second resumes from the service alone
    .venv/bin/python examples/langgraph_tool_gate.py --pause-only
    .venv/bin/python examples/langgraph_tool_gate.py --resume RUN_ID SUSPENSION_ID

The graph's `tools` node is `suspensions_client.integrations.langgraph`'s
`approval_node`: it calls LangGraph's `interrupt()` with the pending tool
calls, and the integration pauses the run with them and with the graph's
checkpoint as the continuation. On the approver's decision (console, or
`--approve-with-token`) the graph resumes with `Command(resume=...)`: the
calls run as the approver finally approved them (an approver may edit
editable arguments); a denial becomes the tool's error answer, and the model
node tells the user. The "model" is a stand-in that asks for one refund, so
the example needs no LLM.

Exit status: 0 when the refund ran and the run completed, 2 when it was not
approved, 1 on an error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

try:
    import suspensions_client  # noqa: F401
except ImportError:  # a checkout where only `make run` installed the runtime set: the client is in the repository
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python" / "src"))

try:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
except ImportError:  # `make run` installs the runtime set only; langgraph is in the dev set
    sys.exit("This example needs langgraph: `make install` (the dev set has it), or `.venv/bin/pip install langgraph`.")
from suspensions_client import Client, NewRun
from suspensions_client.integrations.langgraph import Step, approval_node, pause_graph, resume_graph

LEDGER = os.environ.get("REFUND_LEDGER")  # a file each refund that ran appends a line to (the tests count them)


def model(state: MessagesState) -> dict[str, Any]:
    """A stand-in for the LLM: ask for a refund first, then report what the tool answered."""
    last = state["messages"][-1]
    if isinstance(last, HumanMessage):
        call = {"id": "call_1", "name": "send_refund", "args": {"order": 42, "amount": 900}}
        return {"messages": [AIMessage("", tool_calls=[call])]}
    return {"messages": [AIMessage(f"Done: {last.content}")]}


def route(state: MessagesState) -> str:
    return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END


def send_refund(order: int, amount: int) -> dict[str, Any]:
    """The gated tool (a stand-in: a real graph calls its payment service here)."""
    if LEDGER:
        with open(LEDGER, "a") as ledger:
            ledger.write(json.dumps({"order": order, "amount": amount}) + "\n")
    return {"refunded": amount, "order": order}


def build(editable: bool = False) -> StateGraph:
    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", approval_node([send_refund], editable=editable))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph


def pause(client: Client, args: argparse.Namespace) -> Step:
    """Run the graph until its tool node pauses for approval: that pause registers the run, in one request."""
    run = NewRun("langgraph-agent", scope=args.scope)
    request = HumanMessage("Order 42 arrived broken, please refund it.")
    step = pause_graph(client, build(args.editable), run, {"messages": [request]})
    assert step.suspension is not None  # the stand-in model always asks for the refund
    print(f"tool node paused run {step.suspension.run_id} for approval {step.suspension.id}", flush=True)
    print(f"decide it at {args.url.rstrip('/')}/console/approvals/{step.suspension.id}/", flush=True)
    return step


def resume(client: Client, args: argparse.Namespace, run_id: str, suspension_id: str) -> int:
    """Wait for the decision, resume the graph from the pause's checkpoint, and complete the run."""

    def waiting() -> None:  # once the pause (and its checkpoint) is read: a decision from now on reaches the graph
        print(f"waiting for the decision on {suspension_id}", flush=True)

    step = resume_graph(client, build(args.editable), run_id, suspension_id, poll_interval=args.poll, on_wait=waiting)
    print(f"assistant: {step.state['messages'][-1].content}", flush=True)
    if not step.approved:
        return 2  # the denial already failed the run (or it expired, or was cancelled)
    done = client.complete(run_id, revision=step.revision)
    print(f"run {done.id} {done.state} at revision {done.revision}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("SUSPENSIONS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SUSPENSIONS_TOKEN"), help="or SUSPENSIONS_TOKEN")
    parser.add_argument("--scope", help="the run's scope (needed when the token is an engine in several)")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between polls of the run")
    parser.add_argument("--approve-with-token", metavar="TOKEN", help="approve the pause with this approver token")
    parser.add_argument("--editable", action="store_true", help="let the approver edit the refund's arguments")
    parser.add_argument("--pause-only", action="store_true", help="pause, print the ids, and exit")
    parser.add_argument("--resume", nargs=2, metavar=("RUN_ID", "SUSPENSION_ID"), help="resume a paused run")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set SUSPENSIONS_TOKEN (make run prints one)")

    with ExitStack() as stack:
        client = stack.enter_context(Client(args.url, args.token))
        if args.resume:
            return resume(client, args, *args.resume)
        paused = pause(client, args).suspension
        assert paused is not None
        if args.pause_only:
            return 0
        if args.approve_with_token:
            approver = stack.enter_context(Client(args.url, args.approve_with_token))
            approver.decide(paused.id, paused.version, "approve", reason="approved by the demo's own token")
        return resume(client, args, paused.run_id, paused.id)


if __name__ == "__main__":
    sys.exit(main())
