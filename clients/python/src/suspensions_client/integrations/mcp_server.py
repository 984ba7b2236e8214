"""`suspensions-mcp`: an MCP server whose tools let any MCP client pause for a person (clients/python/README.md).

    SUSPENSIONS_URL=http://127.0.0.1:8000 SUSPENSIONS_TOKEN=sus_... suspensions-mcp            # stdio
    suspensions-mcp --transport http --port 8765      # streamable HTTP at http://127.0.0.1:8765/mcp

Tools: `request_approval` registers a run (tagged `suspensions-mcp`) and
pauses it for approval of one tool call, in one request (the approval id
and the console link come back at once; a client with URL-mode elicitation
is sent to the approval's page instead and gets the decision, spent once:
mcp_elicit.py); `get_approval` reads its state and decision;
`wait_for_decision` waits, at most `timeout_seconds`, for the decision;
`claim_approval` spends an approved (or answered) decision of this server's
own request: it starts and completes the run, once. The token needs the
`engine` role (to register, pause and start) and `auditor` or `approver` (to
read approvals).

Reading never starts a run: an approval in the token's scope may belong to
another engine, whose start is its single grant to execute. `claim_approval`
starts only runs carrying this server's tag (docs/decisions.md, "The MCP
server").

The HTTP transport asks its callers for a bearer token of its own
(`--http-token` or SUSPENSIONS_MCP_HTTP_TOKEN) on every request: 401
otherwise. Without one it binds only to a loopback address (with a warning).
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

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.request_state import RequestStateSecurity
from mcp_types import InputRequiredResult
from starlette.types import ASGIApp

from ..aio import AsyncClient
from ..errors import ClientError, NotFound, SuspensionsError
from ..models import NewRun
from ..records import Approval
from . import mcp_elicit
from .mcp_http import BearerGate, loopback

MAX_WAIT_SECONDS = 600.0  # one tool call must not hold an MCP client's request open for longer
DECIDED = {"approved", "responded"}  # the states that admitted the run: its engine may start it
MARKER = "suspensions-mcp"  # the tag on every run this server registers: claim_approval starts only those
HTTP_TOKEN_ENV = "SUSPENSIONS_MCP_HTTP_TOKEN"
STATE_KEY_ENV = "SUSPENSIONS_MCP_STATE_KEY"
# How long a sealed request_state (2026-07-28) stays good: the client retries once the person has the page open.
STATE_SECONDS = 3600.0
LONG_POLL_SECONDS = 20  # each long poll of the run: below the client's HTTP timeout (30 s)


@dataclass(frozen=True)
class Settings:
    url: str
    token: str
    poll_seconds: float = 2.0
    state_key: str | None = None  # seals request_state; None: a key of this process only (lost on restart)


def build(settings: Settings) -> MCPServer:
    """The MCP server with its four tools, talking to the service at `settings.url`."""
    server = MCPServer(
        "suspensions",
        instructions="Ask a person to approve a tool call before running it; run it only once approved.",
        request_state_security=state_security(settings.state_key),
    )

    @server.tool()
    async def request_approval(
        agent_id: str,
        tool: str,
        arguments: dict[str, Any],
        ctx: Context,
        scope: str | None = None,
        ttl_seconds: int = 3600,
        policy: dict[str, Any] | None = None,
        summary: str = "",
        editable: bool = True,
    ) -> dict[str, Any] | InputRequiredResult:
        """Pause for a person's approval of calling `tool` with `arguments`; returns the approval id and link.

        `policy` is `{quorum, exclude_requester, on_expiry}`; `summary` tells the approver why; with
        `editable` the approver may change the arguments (run the call with `approved_calls`, never your own).
        A client with URL elicitation opens the approval's page for its person and gets the decision: approved,
        the approval is already spent (`claimed`) and `approved_calls` may run; denied, a tool error.
        """
        call = {"id": "call_1", "name": tool, "arguments": arguments, "editable": editable}
        async with client_for(settings) as client:
            if ctx.request_state is not None:
                return await after_elicitation(client, settings, ctx)
            asked = await request(client, settings, agent_id, call, scope, ttl_seconds, policy, summary)
            if not mcp_elicit.can_elicit_url(ctx):
                return asked  # no URL elicitation: the approval to wait for and claim with the other tools
            return await elicit(client, settings, ctx, asked, tool)

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

    @server.tool()
    async def claim_approval(approval_id: str) -> dict[str, Any]:
        """Spend the approval of your own request, once, right before running its `approved_calls`.

        Run them only if this succeeds: a second claim is refused (`resume_already_started`). Only an
        approved or answered request made with `request_approval` here can be claimed.
        """
        async with client_for(settings) as client:
            return await claim(client, approval_id)

    return server


def client_for(settings: Settings) -> AsyncClient:
    return AsyncClient(settings.url, settings.token)


def state_security(key: str | None) -> RequestStateSecurity:
    if key:
        return RequestStateSecurity(keys=[key], ttl=STATE_SECONDS)
    return RequestStateSecurity.ephemeral(ttl=STATE_SECONDS)


async def elicit(
    client: AsyncClient, settings: Settings, ctx: Context, asked: dict[str, Any], tool: str
) -> dict[str, Any] | InputRequiredResult:
    """Send the person to the approval's page (URL elicitation), then settle it; a decline keeps it pending."""
    with problems_as_tool_errors():
        url = await mcp_elicit.link_for(client, asked["approval_id"])
    message = mcp_elicit.message_for(asked, tool)
    if mcp_elicit.modern(ctx):
        return mcp_elicit.first_round(asked, url, message)
    if not await mcp_elicit.mid_call(ctx, asked, url, message):
        return asked
    return await settle(client, settings, asked["approval_id"])


async def after_elicitation(client: AsyncClient, settings: Settings, ctx: Context) -> dict[str, Any]:
    """The retry of a 2026-07-28 round trip: the sealed state names the approval; settle it, once."""
    approval_id = mcp_elicit.state_of(ctx)
    if not mcp_elicit.accepted(ctx):
        return await read(client, approval_id)  # the person declined: the approval stays pending, as today
    return await settle(client, settings, approval_id)


async def settle(client: AsyncClient, settings: Settings, approval_id: str) -> dict[str, Any]:
    """Wait for the decision; approved: spend it (once), so the caller may run `approved_calls`; else refuse."""
    state = await wait(client, settings, approval_id, MAX_WAIT_SECONDS)
    if state["status"] == "pending":
        return state  # `timed_out`: wait_for_decision and claim_approval take it from here
    if state["status"] not in DECIDED:
        reason = f": {state['reason']}" if state["reason"] else ""
        raise ToolError(f"not_approved: the approval is {state['status']}{reason}; do not run its call")
    return await claim(client, approval_id)


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
        # One request registers the run and pauses it: a refused pause leaves no run behind.
        run = NewRun(agent_id, scope=scope, tags=(MARKER,))
        summarised = continuation(agent_id, call["name"], summary)
        pause = await client.pause_for_approval(run, [call], summarised, ttl_seconds=ttl_seconds, approval=policy)
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
    """Only reads: the approval's run may be another engine's, and starting it would spend its grant."""
    with problems_as_tool_errors():
        approval = await client.get_approval(approval_id)
    return view(approval)


async def claim(client: AsyncClient, approval_id: str) -> dict[str, Any]:
    """Start and complete this server's own admitted run: the one grant to execute, taken once."""
    with problems_as_tool_errors():
        approval = await client.get_approval(approval_id)
        admission = claimable(approval)
        started = await client.start(admission)
        await client.complete(started)
    return {**view(approval), "run_state": "completed", "claimed": True}


def claimable(approval: Approval) -> str:
    """The admission to start, or a tool error (before any write) when this server may not start it."""
    if MARKER not in approval.tags:
        raise ToolError(
            "not_claimable: this approval's run was not requested through suspensions-mcp; its own engine starts it"
        )
    if approval.status not in DECIDED or approval.admission_id is None:
        raise ToolError(f"not_claimable: the approval is {approval.status}; only an approved or answered one is")
    return approval.admission_id


async def wait(client: AsyncClient, settings: Settings, approval_id: str, timeout: float) -> dict[str, Any]:
    """Long-polls the run (`GET /runs/{id}/wait`) between reads; polls every `poll_seconds` where it is missing."""
    deadline = time.monotonic() + max(0.0, min(timeout, MAX_WAIT_SECONDS))
    long_poll = True
    while True:
        with problems_as_tool_errors():
            approval = await client.get_approval(approval_id)
        left = deadline - time.monotonic()
        if approval.status != "pending" or left <= 0:
            return {**view(approval), "timed_out": approval.status == "pending"}
        if long_poll and approval.version is not None:
            long_poll = await hold(client, approval, left)
        else:
            await asyncio.sleep(min(settings.poll_seconds, left))


async def hold(client: AsyncClient, approval: Approval, left: float) -> bool:
    """One long poll until the run moves (or about `left` seconds); False where the service has no such endpoint."""
    assert approval.version is not None
    seconds = max(1, min(LONG_POLL_SECONDS, int(left)))
    try:
        await client.wait_run(approval.run_id, after_revision=approval.version.run_revision, timeout=seconds)
    except NotFound:
        return False  # a service older than the long poll (or the run is gone: the next read says which)
    except SuspensionsError as error:
        raise ToolError(f"{error.code or error.status}: {error.detail or error.title}") from error
    except ClientError as error:
        raise ToolError(str(error)) from error
    return True


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
        "run_state": approval.run_state,  # `completed` once claimed
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
    server = build(Settings(args.url, args.token, args.poll, args.state_key))
    if args.transport == "stdio":
        server.run("stdio")
    else:
        serve_http(server, args.host, args.port, args.http_token)
    return 0


def serve_http(server: MCPServer, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP at /mcp, every request behind `token` (loopback only without one: `parse` checked)."""
    import uvicorn

    app: ASGIApp = server.streamable_http_app(host=host)
    if token:
        app = BearerGate(app, token)
    else:
        print(
            f"suspensions-mcp: warning: the HTTP transport on {host} asks for no token; any local process may use"
            f" this server's API token. Give --http-token or set {HTTP_TOKEN_ENV}.",
            file=sys.stderr,
            flush=True,
        )
    uvicorn.run(app, host=host, port=port, log_level=server.settings.log_level.lower())


EPILOG = f"""\
The HTTP transport needs a token of its own from its callers (--http-token or {HTTP_TOKEN_ENV}),
sent as `Authorization: Bearer <token>` on every request, or it answers 401. Without one it binds
only to a loopback address (127.0.0.1, ::1, localhost) and warns; any other --host is refused.
See clients/python/README.md, "MCP server" (and docs/decisions.md, "The MCP server").
"""


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="suspensions-mcp",
        description=(__doc__ or "").split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", default=os.environ.get("SUSPENSIONS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SUSPENSIONS_TOKEN"), help="or SUSPENSIONS_TOKEN")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="the HTTP transport's address (beyond loopback: token)")
    parser.add_argument("--port", type=int, default=8765, help="the HTTP transport's port (path /mcp)")
    parser.add_argument(
        "--http-token",
        default=os.environ.get(HTTP_TOKEN_ENV) or None,
        help=f"the bearer token the HTTP transport asks its callers for (or {HTTP_TOKEN_ENV}, which ps cannot show)",
    )
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between reads where long polls are missing")
    parser.add_argument(
        "--state-key",
        default=os.environ.get(STATE_KEY_ENV) or None,
        help=f"seals the request_state of URL elicitation (or {STATE_KEY_ENV}; 32+ bytes; shared by every instance)",
    )
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set SUSPENSIONS_TOKEN")
    if args.transport == "http" and not args.http_token and not loopback(args.host):
        parser.error(
            f"--host {args.host} is beyond loopback: anyone who reaches it would act with this server's token;"
            f" give --http-token or set {HTTP_TOKEN_ENV}"
        )
    return args


if __name__ == "__main__":
    sys.exit(main())
