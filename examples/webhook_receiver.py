"""A small webhook receiver for the demo: prints each delivery of `make run`'s endpoint, verified.

    .venv/bin/python examples/webhook_receiver.py --secret whsec_...   # the secret `make run` printed

`.venv` has `standardwebhooks` (the runtime set); another Python needs `pip install standardwebhooks`.

Listens on 127.0.0.1:8001 (the demo endpoint's URL is http://127.0.0.1:8001/hooks) and
checks each delivery's Standard Webhooks signature with the secret from `--secret` or the
environment variable WEBHOOK_SECRET: a good one is answered 204 and printed, a bad one is
answered 401 (the sender retries it). Without the `standardwebhooks` package, or without
a secret, it prints every delivery marked "unverified" and answers 204. Standard library
otherwise; any Standard Webhooks library verifies the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:
    from standardwebhooks import Webhook, WebhookVerificationError
except ImportError:  # verification is optional: the demo still shows what arrives
    Webhook = None  # type: ignore[assignment,misc]
    WebhookVerificationError = Exception  # type: ignore[assignment,misc]


def make_handler(verifier: Any) -> type[BaseHTTPRequestHandler]:
    seen: set[str] = set()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            message_id = self.headers.get("webhook-id", "")
            if verifier is None:
                status = "unverified"
            else:
                try:
                    verifier.verify(body, dict(self.headers.items()))
                    status = "verified"
                except WebhookVerificationError as exc:
                    print(f"REFUSED {message_id or '(no webhook-id)'}: {exc}", flush=True)
                    self.send_response(401)
                    self.end_headers()
                    return
            # Delivery is at least once: the same webhook-id again is a retry of what we already have.
            repeat = " (again: already received)" if message_id and message_id in seen else ""
            seen.add(message_id)
            # Handled first, acknowledged after: a receiver that answers 2xx before it has done its work
            # can lose a delivery the service will never send again.
            show(body, message_id, status + repeat)
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per delivery from show(), not http.server's access log

    return Receiver


def show(body: bytes, message_id: str, status: str) -> None:
    try:
        payload = json.loads(body)
    except ValueError:
        print(f"{status} {message_id}: {body[:500]!r}", flush=True)
        return
    kind = payload.get("type", "?") if isinstance(payload, dict) else "?"
    data = payload.get("data", payload) if isinstance(payload, dict) else payload
    print(f"{status} {kind} {message_id}", flush=True)
    print("  " + json.dumps(data, indent=2, sort_keys=True).replace("\n", "\n  "), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--secret", default=os.environ.get("WEBHOOK_SECRET", ""), help="whsec_... (or WEBHOOK_SECRET)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    verifier = None
    if Webhook is None:
        print("standardwebhooks is not installed (pip install standardwebhooks): deliveries are shown unverified.")
    elif not args.secret:
        print("no --secret and no WEBHOOK_SECRET: deliveries are shown unverified.")
    else:
        verifier = Webhook(args.secret)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(verifier))
    print(f"listening on http://{args.host}:{args.port}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
