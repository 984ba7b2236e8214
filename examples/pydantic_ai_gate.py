"""A PydanticAI agent whose refund tool needs approval: it pauses in the service and resumes in a new process.

    pip install ./clients/python[pydantic-ai]  # or `make install`: the dev set has pydantic-ai-slim
    make run                                   # prints an API token
    export SUSPENSIONS_URL=http://127.0.0.1:8000 SUSPENSIONS_TOKEN=sus_...
    .venv/bin/python examples/pydantic_ai_gate.py ask          # pauses, prints the run id, exits
    .venv/bin/python examples/pydantic_ai_gate.py resume RUN_ID   # any process: waits for the decision
    # approve, edit or deny it in the console (`ask` printed the link)

`ask` runs the agent until its `send_refund` call waits for approval
(PydanticAI's deferred tools), pauses the run with the call and the agent's
messages, and exits. `resume` rebuilds the agent from the service alone,
waits for the decision and runs the agent on: the tool runs once with the
arguments as approved (an approver may edit them: the pause marks them
editable), or the model reads the denial. Start `resume` before a denial: a
denial ends the run, and with it the pause's continuation. The "model" is
PydanticAI's `FunctionModel` with a stand-in function: no LLM, no API key.
`--ledger FILE` appends one line per refund actually sent.

Exit status: 0 when the refund ran and the run completed, 2 when it was not
approved, 1 on an error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

try:
    import suspensions_client  # noqa: F401
except ImportError:  # a checkout where only `make run` installed the runtime set: the client is in the repository
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python" / "src"))

try:
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
except ImportError:  # `make run` installs the runtime set only
    sys.exit("This example needs pydantic-ai: `pip install ./clients/python[pydantic-ai]` (or `make install`).")
from suspensions_client import Client, NewRun
from suspensions_client.integrations import pydantic_ai as gate

INSTRUCTIONS = "You are the support agent. Refunds need a supervisor's approval."


def build(amount: int, ledger: Path | None) -> Agent[None, str | DeferredToolRequests]:
    """The agent; built the same way in both processes (only the service carries state between them)."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """A stand-in for the LLM: ask for a refund, then report what the tool answered (or the denial)."""
        last = messages[-1].parts[-1]
        if last.part_kind == "user-prompt":
            return ModelResponse(parts=[ToolCallPart("send_refund", {"order": 42, "amount": amount}, "call_1")])
        content = last.content if isinstance(last.content, str) else json.dumps(last.content)
        return ModelResponse(parts=[TextPart(f"Done: {content}")])

    agent = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests], instructions=INSTRUCTIONS)

    @agent.tool_plain(requires_approval=True)
    def send_refund(order: int, amount: int) -> dict[str, Any]:
        """Refund an order (a stand-in: a real agent calls its payment service here)."""
        if ledger is not None:
            with ledger.open("a") as out:
                out.write(json.dumps({"order": order, "amount": amount}) + "\n")
        return {"refunded": amount, "order": order}

    return agent


def ask(client: Client, args: argparse.Namespace) -> int:
    run = NewRun("pydantic-ai-agent", scope=args.scope)  # registered by its first pause, in one request
    result = build(args.amount, args.ledger).run_sync("Order 42 arrived broken, please refund it.")
    if not isinstance(result.output, DeferredToolRequests):
        print(f"assistant: {result.output}", flush=True)
        return 1  # the stand-in model always asks for the refund
    paused = gate.pause(client, run, result.output, result.all_messages(), editable=True, system_prompt=INSTRUCTIONS)
    print(f"paused run {paused.run_id} for approval {paused.id}", flush=True)
    print(f"decide it at {args.url.rstrip('/')}/console/approvals/{paused.id}/", flush=True)
    print(f"then: examples/pydantic_ai_gate.py resume {paused.run_id}", flush=True)
    return 0


def resume(client: Client, args: argparse.Namespace) -> int:
    paused = gate.live_pause(client, args.run_id)  # read while live: a denial ends the run and its continuation
    if paused is not None:
        print(f"waiting for the decision on approval {paused.id}", flush=True)
    back = gate.resume(client, args.run_id, paused=paused, timeout=args.timeout, poll_interval=args.poll)
    print(f"decision: {back.status}", flush=True)
    agent = build(args.amount, args.ledger)
    result = agent.run_sync(message_history=back.messages, deferred_tool_results=back.results)
    print(f"assistant: {result.output}", flush=True)
    if back.started is None:
        return 2  # the denial already failed the run (or it expired, or was cancelled)
    done = client.complete(back.started)
    print(f"run {done.id} {done.state} at revision {done.revision}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("SUSPENSIONS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SUSPENSIONS_TOKEN"), help="or SUSPENSIONS_TOKEN")
    parser.add_argument("--scope", help="the run's scope (needed when the token is an engine in several)")
    parser.add_argument("--amount", type=int, default=900, help="the refund the model asks for")
    parser.add_argument("--ledger", type=Path, help="append each refund actually sent to this file")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds `resume` waits at most")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between polls of the run")
    step = parser.add_subparsers(dest="step", required=True)
    step.add_parser("ask", help="run the agent until it needs approval, pause, exit")
    step.add_parser("resume", help="wait for the decision and run the agent on").add_argument("run_id")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set SUSPENSIONS_TOKEN (make run prints one)")
    with Client(args.url, args.token) as client:
        return ask(client, args) if args.step == "ask" else resume(client, args)


if __name__ == "__main__":
    sys.exit(main())
