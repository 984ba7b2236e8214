"""`suspensions-mcp`: an MCP server whose tools let any MCP client pause for a person (DESIGN §23).

    SUSPENSIONS_URL=http://127.0.0.1:8000 SUSPENSIONS_TOKEN=sus_... suspensions-mcp            # stdio
    suspensions-mcp --transport http --port 8765      # streamable HTTP at http://127.0.0.1:8765/mcp

Tools: `request_approval` registers a run and pauses it for approval of one
tool call (the approval id and the console link come back at once);
`get_approval` reads its state and decision; `wait_for_decision` waits, at
most `timeout_seconds`, for the decision. The token needs the `engine` role
(to register and pause) and `auditor` or `approver` (to read approvals).

Once an approval is approved or answered, the first read that reports it also
starts and completes the run: the service then records that the decision was
handed over, and the run leaves the engines' admitted-work queue. Later reads
report the same decision.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ..aio import AsyncClient
from ..errors import ClientError, SuspensionsError
from ..records import Approval

MAX_WAIT_SECONDS = 600.0  # one tool call must not hold an MCP client's request open for longer
DECIDED = {"approved", "responded"}  # the states that admitted the run: the engine (this server) starts it


@dataclass(frozen=True)
class Settings:
    url: str
    token: str
    poll_seconds: float = 2.0


def build(settings: Settings) -> MCPServer:
    """The MCP server with its three tools, talking to the service at `settings.url`."""
    server = MCPServer(
        "suspensions",
        instructions="Ask a person to approve a tool call before running it; run it only once approved.",
    )

    @server.tool()
    async def request_approval(
        agent_id: str,
        tool: str,
        arguments: dict[str, Any],
        scope: str | None = None,
        ttl_seconds: int = 3600,
        policy: dict[str, Any] | None = None,
        summary: str = "",
        editable: bool = True,
    ) -> dict[str, Any]:
        """Pause for a person's approval of calling `tool` with `arguments`; returns the approval id and link.

        `policy` is `{quorum, exclude_requester, on_expiry}`; `summary` tells the approver why; with
        `editable` the approver may change the arguments (run the call with `approved_calls`, never your own).
        """
        call = {"id": "call_1", "name": tool, "arguments": arguments, "editable": editable}
        async with client_for(settings) as client:
            return await request(client, settings, agent_id, call, scope, ttl_seconds, policy, summary)

    @server.tool()
    async def get_approval(approval_id: str) -> dict[str, Any]:
        """An approval's state (`pending`, `approved`, `denied`, `responded`, `expired`, `cancelled`) and decision."""
        async with client_for(settings) as client:
            return await read(client, approval_id)

    @server.tool()
    async def wait_for_decision(approval_id: str, timeout_seconds: float = 60.0) -> dict[str, Any]:
        """Wait (at most `timeout_seconds`, up to 600) for the decision; `timed_out` is true if it is still pending."""
        async with client_for(settings) as client:
            return await wait(client, settings, approval_id, timeout_seconds)

    return server


def client_for(settings: Settings) -> AsyncClient:
    return AsyncClient(settings.url, settings.token)


async def request(
    client: AsyncClient,
    settings: Settings,
    agent_id: str,
    call: dict[str, Any],
    scope: str | None,
    ttl_seconds: int,
    policy: dict[str, Any] | None,
    summary: str,
) -> dict[str, Any]:
    with problems_as_tool_errors():
        run = await client.register(agent_id, scope=scope)
        try:
            pause = await client.pause_for_approval(
                run, [call], continuation(agent_id, call["name"], summary), ttl_seconds=ttl_seconds, approval=policy
            )
        except SuspensionsError:
            await client.cancel(run)  # the pause was refused: leave no run behind that nobody will ever end
            raise
    return {
        "approval_id": pause.id,
        "run_id": pause.run_id,
        "status": "pending",
        "expires_at": pause.expires_at.isoformat() if pause.expires_at else None,
        "console_url": f"{settings.url.rstrip('/')}/console/approvals/{pause.id}/",
    }


def continuation(agent_id: str, tool: str, summary: str) -> dict[str, Any]:
    """What the approver sees of the asking agent: an MCP client keeps its own state, so this is a summary."""
    asked = summary or f"{agent_id} asks to call {tool} (over MCP)."
    return {
        "messages": [{"role": "user", "content": asked}],
        "system_prompt": "",
        "step_index": 0,
        "tokens_used": 0,
        "new_messages_from": 0,
        "session_id": "",
        "config": {"model": "mcp-client", "tools": [tool]},  # the asking model is the MCP client's, unknown here
    }


async def read(client: AsyncClient, approval_id: str) -> dict[str, Any]:
    with problems_as_tool_errors():
        approval = await client.get_approval(approval_id)
        await hand_over(client, approval)
    return view(approval)


async def hand_over(client: AsyncClient, approval: Approval) -> None:
    """Start and complete an admitted run once: a second reader (or a lost race) finds it started and moves on."""
    if approval.status not in DECIDED or approval.admission_id is None:
        return
    try:
        started = await client.start(approval.admission_id)
        await client.complete(started)
    except SuspensionsError as already:
        if already.status != 409:
            raise


async def wait(client: AsyncClient, settings: Settings, approval_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + max(0.0, min(timeout, MAX_WAIT_SECONDS))
    while True:
        state = await read(client, approval_id)
        left = deadline - time.monotonic()
        if state["status"] != "pending" or left <= 0:
            return {**state, "timed_out": state["status"] == "pending"}
        await asyncio.sleep(min(settings.poll_seconds, left))


def view(approval: Approval) -> dict[str, Any]:
    """The approval as an MCP client needs it; `approved_calls` are what may run (an approver may edit them)."""
    return {
        "approval_id": approval.suspension_id,
        "run_id": approval.run_id,
        "agent_id": approval.agent_id,
        "scope": approval.scope,
        "status": approval.status,
        "requested": [{"tool": c.name, "arguments": json.loads(c.arguments)} for c in approval.calls],
        "approved_calls": [approved(call) for call in approval.final_calls or []],
        "decided_by": approval.decided_by,
        "reason": approval.note,
        "response": approval.response,
        "expires_at": approval.expires_at.isoformat() if approval.expires_at else None,
        "resolved_at": approval.resolved_at.isoformat() if approval.resolved_at else None,
    }


def approved(call: dict[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments")
    parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    return {"tool": call.get("name"), "arguments": parsed, "edited": bool(call.get("edited"))}


@contextmanager
def problems_as_tool_errors() -> Iterator[None]:
    """A problem from the service (or a lost connection) becomes a tool error carrying its words, not a crash."""
    try:
        yield
    except SuspensionsError as error:
        fields = f" {json.dumps(error.errors)}" if error.errors else ""  # which argument, so the model can fix it
        raise ToolError(f"{error.code or error.status}: {error.detail or error.title}{fields}") from error
    except ClientError as error:
        raise ToolError(str(error)) from error


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    server = build(Settings(args.url, args.token, args.poll))
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port)
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="suspensions-mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("SUSPENSIONS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SUSPENSIONS_TOKEN"), help="or SUSPENSIONS_TOKEN")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="the HTTP transport's address")
    parser.add_argument("--port", type=int, default=8765, help="the HTTP transport's port (path /mcp)")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between reads while waiting")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set SUSPENSIONS_TOKEN")
    return args


if __name__ == "__main__":
    sys.exit(main())
