"""An MCP client session with `suspensions-mcp`: ask a person before a tool runs, then run it as approved.

    .venv/bin/pip install './clients/python[mcp]'   # the `mcp` extra (the dev set of `make install` has it)
    make run                                        # prints an API token (every role, scope `demo`)
    export SUSPENSIONS_URL=http://127.0.0.1:8000 SUSPENSIONS_TOKEN=sus_...
    .venv/bin/python examples/mcp_client_session.py [--approve-with-token TOKEN]

This is what an assistant (a desktop app, an IDE) does through the MCP
server: it starts `suspensions-mcp` over stdio (the same server its MCP
configuration would start), calls `request_approval` for a `send_refund`,
prints the console link, and calls `wait_for_decision` until a person
decides. Approved: it spends the approval with `claim_approval` (once; the
reads never do) and runs the refund with the arguments as approved (the
approver may have edited them). Denied: it prints the approver's reason.
The server's token needs the `engine` role and `auditor` or `approver`
(make run's token holds every role). `--http URL` talks to a server already
started with `suspensions-mcp --transport http` instead, sending it the
server's own bearer token (`--http-token` or SUSPENSIONS_MCP_HTTP_TOKEN).

Exit status: 0 when the approved refund ran, 2 when it was not approved, 1 on an error.
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
    import suspensions_client
except ImportError:  # a checkout where only `make run` installed the runtime set: the client is in the repository
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python" / "src"))
    import suspensions_client

try:
    from mcp import Client as MCPClient
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
except ImportError:
    sys.exit("This example needs the `mcp` extra: `.venv/bin/pip install './clients/python[mcp]'`.")
from suspensions_client import Client

MODULE = "suspensions_client.integrations.mcp_server"  # the `suspensions-mcp` console script, by module


def send_refund(order: int, amount: int) -> dict[str, Any]:
    """The gated tool (a stand-in: a real assistant calls the payment service here)."""
    return {"refunded": amount, "order": order}


async def session(args: argparse.Namespace) -> int:
    async with MCPClient(server(args), read_timeout_seconds=args.timeout + 60) as mcp:
        asked = await tool(
            mcp,
            "request_approval",
            agent_id="desk-assistant",
            tool="send_refund",
            arguments={"order": 42, "amount": args.amount},
            scope=args.scope,
            summary="The customer's order 42 arrived broken; refund it?",
        )
        print(f"asked for approval {asked['approval_id']}", flush=True)
        print(f"decide it at {asked['console_url']}", flush=True)
        if args.approve_with_token:
            approve(args, asked["approval_id"])
        decided = {"timed_out": True}
        while decided["timed_out"]:  # each call waits at most --timeout seconds: the MCP request stays short
            decided = await tool(
                mcp, "wait_for_decision", approval_id=asked["approval_id"], timeout_seconds=args.timeout
            )
        if decided["status"] != "approved":
            return report(decided)
        # Spend the approval before acting on it: a second claim is refused, so the refund runs once.
        return report(await tool(mcp, "claim_approval", approval_id=asked["approval_id"]))


def report(decided: dict[str, Any]) -> int:
    if decided["status"] != "approved":
        print(f"not approved: {decided['status']}: {decided['reason']}", flush=True)
        return 2
    for call in decided["approved_calls"]:  # never the arguments asked for: the approver may have edited them
        result = send_refund(**call["arguments"])
        print(f"ran {call['tool']}({json.dumps(call['arguments'])}) -> {json.dumps(result)}", flush=True)
    return 0


async def tool(mcp: MCPClient, name: str, **arguments: Any) -> dict[str, Any]:
    result = await mcp.call_tool(name, arguments)
    if result.is_error or result.structured_content is None:
        raise SystemExit(f"{name} failed: {' '.join(getattr(part, 'text', '') for part in result.content)}")
    return result.structured_content


def server(args: argparse.Namespace) -> Any:
    if args.http and args.http_token:
        headers = {"Authorization": f"Bearer {args.http_token}"}
        return streamable_http_client(args.http, http_client=create_mcp_http_client(headers=headers))
    if args.http:
        return args.http  # a server on loopback started without a token
    # The server process uses this very client package, installed or not.
    source = str(Path(suspensions_client.__file__).resolve().parents[1])
    env = {**os.environ, "SUSPENSIONS_URL": args.url, "SUSPENSIONS_TOKEN": args.token, "PYTHONPATH": source}
    return StdioServerParameters(command=sys.executable, args=["-m", MODULE, "--poll", str(args.poll)], env=env)


def approve(args: argparse.Namespace, approval_id: str) -> None:
    with Client(args.url, args.approve_with_token) as approver:
        pending = approver.get_approval(approval_id)
        approver.decide(approval_id, pending.version, "approve", reason="approved by the demo's own token")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("SUSPENSIONS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SUSPENSIONS_TOKEN"), help="or SUSPENSIONS_TOKEN")
    parser.add_argument("--scope", help="the run's scope (needed when the token is an engine in several)")
    parser.add_argument("--amount", type=int, default=900, help="the refund the assistant asks for")
    parser.add_argument("--timeout", type=float, default=60, help="seconds one wait_for_decision call waits")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between the server's reads while waiting")
    parser.add_argument(
        "--http", metavar="URL", help="an MCP server on streamable HTTP, e.g. http://127.0.0.1:8765/mcp"
    )
    parser.add_argument(
        "--http-token",
        default=os.environ.get("SUSPENSIONS_MCP_HTTP_TOKEN"),
        help="the HTTP server's own bearer token (or SUSPENSIONS_MCP_HTTP_TOKEN)",
    )
    parser.add_argument("--approve-with-token", metavar="TOKEN", help="approve the request with this approver token")
    args = parser.parse_args(argv)
    if not args.token and not args.http:
        parser.error("give --token or set SUSPENSIONS_TOKEN (make run prints one)")
    return args


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(session(parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
