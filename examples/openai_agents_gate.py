"""An OpenAI Agents SDK agent whose refund tool needs approval: the run pauses in the service and resumes elsewhere.

    pip install './clients/python[openai-agents]'   # or `make install`: the dev set has openai-agents
    make run                                        # prints an API token
    export SUSPENSIONS_URL=http://127.0.0.1:8000 SUSPENSIONS_TOKEN=sus_...
    .venv/bin/python examples/openai_agents_gate.py ask             # runs the agent until it asks, pauses, exits
    .venv/bin/python examples/openai_agents_gate.py resume RUN PAUSE  # waits for the decision, finishes the agent

`ask` runs the agent until `send_refund` (a function tool with
`needs_approval=True`) interrupts it, pauses the service's run with the
interruption as the pending call and the SDK's serialised `RunState` as the
continuation, prints the run and pause ids and exits: nothing is kept in
memory or on disk. Decide in the console (the link is printed), or pass
`--approve-with-token TOKEN` to `ask`. `resume` rebuilds the agent's run
from the service alone, applies the decision (approve, edited arguments,
respond, deny) and lets the agent finish. Start `resume` before a denial if
the model should read it: a denial deletes the pause, and with it the run
state (the run fails). `both` does the two in one process.

The "model" is a canned stand-in (the SDK's `Model` interface), so the
example needs no network and no API key. `--ledger FILE` appends one line
per refund actually sent, so a caller can count them.

Exit status: 0 when paused (`ask`) or when the refund ran and the run
completed, 2 when it was not approved, 1 on an error.
"""

from __future__ import annotations

import argparse
import asyncio
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
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.testing import assistant_message, function_call
    from agents.usage import Usage
except ImportError:  # `make run` installs the runtime set only
    sys.exit("This example needs openai-agents: `pip install './clients/python[openai-agents]'` (or `make install`).")
from suspensions_client import Client, NewRun
from suspensions_client.integrations import openai_agents

INSTRUCTIONS = "You are the support agent. Refunds need a supervisor's approval."


class CannedModel(Model):
    """A stand-in for the LLM: ask for a refund first, then report what the tool answered (no network)."""

    def __init__(self, amount: int = 900) -> None:
        self.amount = amount

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        answers = [i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if answers:
            output = [assistant_message(f"Done: {answers[-1]['output']}")]
        else:
            output = [function_call("send_refund", {"order": 42, "amount": self.amount}, call_id="call_refund_1")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the canned model does not stream")


def build_agent(ledger: Path | None, amount: int = 900) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def send_refund(order: int, amount: int) -> str:
        """Refund `amount` on `order` (a stand-in: a real agent calls its payment service here)."""
        if ledger is not None:
            with ledger.open("a") as out:  # one line per refund sent: the caller counts them
                out.write(json.dumps({"order": order, "amount": amount}) + "\n")
        return json.dumps({"refunded": amount, "order": order})

    return Agent(name="support", instructions=INSTRUCTIONS, model=CannedModel(amount), tools=[send_refund])


async def ask(client: Client, args: argparse.Namespace) -> tuple[str, str]:
    """Run the agent until the refund asks for approval; pause the service's run on it."""
    run = NewRun("openai-agents-support", scope=args.scope, session_id="order-42")  # registered by its first pause
    agent = build_agent(args.ledger, args.amount)
    result = await Runner.run(agent, "Order 42 arrived broken, please refund it.")
    pause = openai_agents.pause_for_approval(client, run, result, agent, editable=True, session_id="order-42")
    print(f"paused run {pause.run_id} for approval {pause.id}", flush=True)
    print(f"decide it at {args.url.rstrip('/')}/console/approvals/{pause.id}/", flush=True)
    return pause.run_id, pause.id


async def resume(client: Client, args: argparse.Namespace, run_id: str, pause_id: str) -> int:
    """Rebuild the agent's run from the service alone, apply the decision and let the agent finish."""
    agent = build_agent(args.ledger)
    # Read the pause before waiting: a denial deletes it, and the model should still read the rejection.
    pause = openai_agents.read_pause(client, pause_id)
    print(f"waiting for the decision on {pause_id} (polling every {args.poll} s)", flush=True)
    outcome = client.wait_for_admission(run_id, pause_id, timeout=3600, poll_interval=args.poll)
    try:
        resumed = await openai_agents.resume(client, agent, outcome, pause)
    except openai_agents.NothingToResume as error:
        print(error, flush=True)
        return 2
    result = await Runner.run(agent, resumed.state)
    print(f"decision: {resumed.decision}", flush=True)
    print(f"assistant: {result.final_output}", flush=True)
    if resumed.started is None:
        return 2  # the denial already failed the service's run
    done = client.complete(run_id, revision=resumed.started.run_revision)
    print(f"run {done.id} {done.state} at revision {done.revision}", flush=True)
    return 0 if resumed.decision == "approve" else 2


async def main_async(args: argparse.Namespace) -> int:
    with Client(args.url, args.token) as client:
        if args.phase == "resume":
            return await resume(client, args, args.run_id, args.pause_id)
        run_id, pause_id = await ask(client, args)
        if args.approve_with_token:
            with Client(args.url, args.approve_with_token) as approver:
                pause = approver.get_approval(pause_id)
                approver.decide(pause_id, pause.version, "approve", reason="approved by the demo's own token")
        return await resume(client, args, run_id, pause_id) if args.phase == "both" else 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("phase", choices=["ask", "resume", "both"])
    parser.add_argument("run_id", nargs="?", help="resume: the run `ask` printed")
    parser.add_argument("pause_id", nargs="?", help="resume: the pause `ask` printed")
    parser.add_argument("--url", default=os.environ.get("SUSPENSIONS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SUSPENSIONS_TOKEN"), help="or SUSPENSIONS_TOKEN")
    parser.add_argument("--scope", help="the run's scope (needed when the token is an engine in several)")
    parser.add_argument("--amount", type=int, default=900, help="the refund the canned model asks for")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between polls of the run")
    parser.add_argument("--ledger", type=Path, help="append one line per refund actually sent to this file")
    parser.add_argument("--approve-with-token", metavar="TOKEN", help="approve the pause with this approver token")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set SUSPENSIONS_TOKEN (make run prints one)")
    if args.phase == "resume" and not (args.run_id and args.pause_id):
        parser.error("resume needs the run id and the pause id that `ask` printed")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    set_tracing_disabled(True)  # no API key: the SDK would otherwise try to export traces to OpenAI
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
