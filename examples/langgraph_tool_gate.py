"""A LangGraph graph whose tool node pauses in the suspensions service for approval, and resumes on the decision.

    make install                              # the dev set has langgraph (or: pip install langgraph)
    make run                                  # prints an API token
    export SUSPENSIONS_URL=http://127.0.0.1:8000 SUSPENSIONS_TOKEN=sus_...
    .venv/bin/python examples/langgraph_tool_gate.py [--approve-with-token TOKEN]

No `interrupt()` and no checkpointer: the graph's `tools` node itself calls
the client. It pauses the run with the pending tool calls and the graph's
messages as the continuation, waits for the approver (console, or
`--approve-with-token`), starts the admission and runs the calls as the
approver finally approved them (an approver may edit editable arguments).
A denial becomes the tool's answer, and the model node tells the user. The
"model" is a stand-in that asks for one refund, so the example needs no LLM.

Exit status: 0 when the refund ran and the run completed, 2 when it was not
approved, 1 on an error.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any, TypedDict

try:
    import suspensions_client  # noqa: F401
except ImportError:  # a checkout where only `make run` installed the runtime set: the client is in the repository
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python" / "src"))

try:
    from langgraph.graph import END, START, StateGraph
except ImportError:  # `make run` installs the runtime set only; langgraph is in the dev set
    sys.exit("This example needs langgraph: `make install` (the dev set has it), or `.venv/bin/pip install langgraph`.")
from suspensions_client import Client

SYSTEM_PROMPT = "You are the support agent. Refunds need a supervisor's approval."


class State(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]
    run_id: str
    revision: int
    approved: bool


def model(state: State) -> dict[str, Any]:
    """A stand-in for the LLM: ask for a refund first, then report what the tool answered."""
    last = state["messages"][-1]
    if last["role"] == "user":
        arguments = json.dumps({"order": 42, "amount": 900})
        call = {"id": "call_1", "type": "function", "function": {"name": "send_refund", "arguments": arguments}}
        return {"messages": [{"role": "assistant", "content": None, "tool_calls": [call]}]}
    return {"messages": [{"role": "assistant", "content": f"Done: {last['content']}"}]}


def route(state: State) -> str:
    return "tools" if state["messages"][-1].get("tool_calls") else END


def send_refund(order: int, amount: int) -> dict[str, Any]:
    """The gated tool (a stand-in: a real graph calls its payment service here)."""
    return {"refunded": amount, "order": order}


def tool_answer(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def tool_gate(client: Client, approver: Client | None, poll: float, console: str) -> Any:
    """The graph's tool node: pause for approval, wait for the decision, run what was approved."""

    def tools(state: State) -> dict[str, Any]:
        asked = state["messages"][-1]["tool_calls"]
        calls = [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in asked]
        continuation = {
            "messages": state["messages"],
            "system_prompt": SYSTEM_PROMPT,
            "step_index": len(state["messages"]),
            "tokens_used": 0,
            "new_messages_from": 0,
            "session_id": "langgraph-demo",
            "config": {"model": "stand-in", "tools": ["send_refund"]},
        }
        pause = client.pause_for_approval(state["run_id"], calls, continuation, revision=state["revision"])
        print(f"tool node paused run {pause.run_id} for approval {pause.id}", flush=True)
        print(f"decide it at {console}/console/approvals/{pause.id}/", flush=True)
        if approver is not None:
            approver.decide(pause.id, pause.version, "approve", reason="approved by the demo's own token")
        outcome = client.wait_for_admission(pause.run_id, pause.id, timeout=3600, poll_interval=poll)
        if not outcome.admitted:
            refusal = f"not approved ({outcome.status}): {outcome.reason}"
            return {"messages": [tool_answer(c["id"], refusal) for c in calls], "approved": False}
        started = client.start(outcome)
        decision = started.input_json()
        # The calls as finally approved: an approver may have edited editable arguments.
        answers = [
            tool_answer(call["id"], json.dumps(send_refund(**json.loads(call["arguments"]))))
            for call in decision["calls"]
        ]
        return {"messages": answers, "revision": started.run_revision, "approved": True}

    return tools


def build(client: Client, approver: Client | None = None, poll: float = 2.0, console: str = "") -> Any:
    graph = StateGraph(State)
    graph.add_node("model", model)
    graph.add_node("tools", tool_gate(client, approver, poll, console.rstrip("/")))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("SUSPENSIONS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SUSPENSIONS_TOKEN"), help="or SUSPENSIONS_TOKEN")
    parser.add_argument("--scope", help="the run's scope (needed when the token is an engine in several)")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between polls of the run")
    parser.add_argument("--approve-with-token", metavar="TOKEN", help="approve the pause with this approver token")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set SUSPENSIONS_TOKEN (make run prints one)")

    with ExitStack() as stack:
        client = stack.enter_context(Client(args.url, args.token))
        approver = stack.enter_context(Client(args.url, args.approve_with_token)) if args.approve_with_token else None
        run = client.register("langgraph-agent", scope=args.scope)
        request = {"role": "user", "content": "Order 42 arrived broken, please refund it."}
        state = {"messages": [request], "run_id": run.id, "revision": run.revision, "approved": False}
        final = build(client, approver, args.poll, args.url).invoke(state)
        print(f"assistant: {final['messages'][-1]['content']}", flush=True)
        if not final["approved"]:
            return 2  # the denial already failed the run (or it expired, or was cancelled)
        done = client.complete(final["run_id"], revision=final["revision"])
        print(f"run {done.id} {done.state} at revision {done.revision}", flush=True)
        return 0


if __name__ == "__main__":
    sys.exit(main())
