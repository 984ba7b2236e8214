"""An engine loop on the Python client: register a run, pause it for approval, wait, start, complete.

    make run                                  # prints an API token (every role, scope `demo`)
    export SUSPENSIONS_URL=http://127.0.0.1:8000 SUSPENSIONS_TOKEN=sus_...
    .venv/bin/python examples/engine_loop.py

It pauses a `send_refund` call for approval and waits: approve or deny it in
the console (the link is printed; log in with the demo user `make run`
printed). For a demo without the console, `--approve-with-token TOKEN`
approves it with that approver token (`make run`'s token holds every role,
so it may approve its own pause: the demo pause carries no policy that
excludes the requester).

The wait polls the run every `--poll` seconds. With `--webhook-port PORT` it
also listens on 127.0.0.1:PORT for webhooks: it creates an endpoint there
(the token needs the `operator` role), verifies each delivery, and wakes the
wait as soon as the decision is announced; the endpoint is disabled at exit.

Exit status: 0 when the approved call ran and the run completed, 2 when the
pause ended otherwise (denied, expired, cancelled), 1 on an error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

try:
    import suspensions_client  # noqa: F401
except ImportError:  # a checkout where only `make run` installed the runtime set: the client is in the repository
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python" / "src"))

from suspensions_client import Client, Inbox, NewRun, WebhookVerificationError, verify_webhook

CONTINUATION = {
    "messages": [
        {"role": "user", "content": "Order 42 arrived broken, please refund it."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function"}]},
    ],
    "system_prompt": "You are the support agent. Refunds over 100 need a supervisor.",
    "step_index": 1,
    "tokens_used": 412,
    "new_messages_from": 0,
    "session_id": "demo-session",
    "config": {"model": "gpt-4.1", "tools": ["send_refund"], "tools_restricted": True},
}


def send_refund(order: int, amount: int) -> dict[str, Any]:
    """The tool the approver let through (a stand-in: a real engine calls its payment service here)."""
    return {"refunded": amount, "order": order}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    with ExitStack() as stack:
        client = stack.enter_context(Client(args.url, args.token))
        inbox = listen(stack, client, args.webhook_port) if args.webhook_port else None

        # The run's first pause registers it too: one request (docs/api.md, "One call to pause").
        run = NewRun("support-agent", scope=args.scope)
        calls = [{"id": "call_1", "name": "send_refund", "arguments": {"order": 42, "amount": args.amount}}]
        pause = client.pause_for_approval(run, calls, CONTINUATION, ttl_seconds=args.ttl)
        print(f"paused run {pause.run_id} for approval {pause.id}", flush=True)
        print(f"decide it at {args.url.rstrip('/')}/console/approvals/{pause.id}/", flush=True)
        if args.approve_with_token:
            with Client(args.url, args.approve_with_token) as approver:
                approver.decide(pause.id, pause.version, "approve", reason="approved by the demo's own token")

        how = f"polling every {args.poll:g} s" + (", woken by webhooks" if inbox is not None else "")
        print(f"waiting for the decision ({how})", flush=True)
        outcome = client.wait_for_admission(
            pause.run_id, pause.id, timeout=args.timeout, poll_interval=args.poll, inbox=inbox
        )
        if not outcome.admitted:
            print(f"not approved: {outcome.status}: {outcome.reason}", flush=True)
            return 2
        started = client.start(outcome)
        decision = started.input_json()
        print(f"approved by {decision['approver']}: {decision.get('note') or '(no note)'}", flush=True)
        for call in decision["calls"]:  # the calls as finally approved (an approver may have edited them)
            result = send_refund(**json.loads(call["arguments"]))
            print(f"ran {call['name']}({call['arguments']}) -> {json.dumps(result)}", flush=True)
        done = client.complete(started)
        print(f"run {done.id} {done.state} at revision {done.revision}", flush=True)
        return 0


def listen(stack: ExitStack, client: Client, port: int) -> Inbox:
    """Receive webhooks on 127.0.0.1:`port`: each verified delivery wakes the wait (the API stays the truth)."""
    inbox = Inbox()
    secret = {"value": ""}

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                event = verify_webhook(dict(self.headers.items()), body, secret["value"])
            except WebhookVerificationError as refused:
                print(f"webhook refused: {refused}", flush=True)
                self.send_response(401)
                self.end_headers()
                return
            self.send_response(204)
            self.end_headers()
            print(f"webhook: {event['type']}", flush=True)
            inbox.deliver(event)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stack.callback(server.server_close)
    stack.callback(server.shutdown)
    endpoint = client.create_webhook(
        f"http://127.0.0.1:{port}/hooks",
        event_types=["approval.decided", "suspension.expired", "run.finished"],
        description="examples/engine_loop.py",
    )
    secret["value"] = endpoint.secret or ""
    stack.callback(client.disable_webhook, endpoint.id)
    return inbox


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("SUSPENSIONS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("SUSPENSIONS_TOKEN"), help="or SUSPENSIONS_TOKEN")
    parser.add_argument("--scope", help="the run's scope (needed when the token is an engine in several)")
    parser.add_argument("--amount", type=int, default=900, help="the refund the model asks for")
    parser.add_argument("--ttl", type=int, default=3600, help="seconds until the pause expires")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds this loop waits at most")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between polls of the run")
    parser.add_argument("--approve-with-token", metavar="TOKEN", help="approve the pause with this approver token")
    parser.add_argument("--webhook-port", type=int, help="also wake on webhooks received on this port")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set SUSPENSIONS_TOKEN (make run prints one)")
    return args


if __name__ == "__main__":
    sys.exit(main())
