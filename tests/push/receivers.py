"""Real webhook receivers for the push tests: `http.server` in a thread on 127.0.0.1.

A receiver answers from a script (one status per request, then its default),
records every request (headers and body bytes) and can hold its first request
open, like a receiver that hangs, until the test lets it go. One that trickles
holds every request until the test lets it go, sending its answer's header a
line at a time meanwhile, like a slow receiver that never trips the sender's
per-read timeout: the sending worker stays busy with it for as long as the test
wants.
"""

import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook

# A trickling receiver's pace: well inside the sender's 10 s per-read timeout (suspensions/outbound.py).
TRICKLE_SECONDS = 1.0


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    status: int
    # The sender's TCP port: requests that share it came over one kept-alive connection.
    client_port: int = 0
    # The whole answer reached the sender's connection (a trickled one to a dead sender does not).
    answered: bool = False


@dataclass
class Receiver:
    port: int
    statuses: list[int] = field(default_factory=list)
    default: int = 200
    hang_first: bool = False
    # Seconds each answer takes: a receiver slow enough that a backlog outlasts one worker's start.
    delay: float = 0.0
    # Hold every request until `released`, trickling the answer's header (one line a TRICKLE_SECONDS),
    # for at most `hold_seconds`: below the delivery task's time limit, so the sender never gives up.
    trickle: bool = False
    hold_seconds: float = 100.0
    requests: list[Received] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)
    server: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> "Receiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.1: the connection stays open between requests, as a production receiver's does.
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                first = not receiver.requests
                status = receiver.statuses.pop(0) if receiver.statuses else receiver.default
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.requests.append(Received(headers, body, status, self.client_address[1]))
                receiver.arrived.set()
                if receiver.trickle:
                    self.trickle(receiver.requests[-1], status)
                    return
                if first and receiver.hang_first:
                    receiver.released.wait(120)
                time.sleep(receiver.delay)
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                receiver.requests[-1].answered = True

            def trickle(self, received: Received, status: int) -> None:
                try:
                    self.wfile.write(f"HTTP/1.1 {status} OK\r\n".encode())
                    self.wfile.flush()
                    until = time.monotonic() + receiver.hold_seconds
                    while not receiver.released.wait(TRICKLE_SECONDS) and time.monotonic() < until:
                        self.wfile.write(b"X-Still-Working: yes\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"Content-Length: 0\r\n\r\n")
                    self.wfile.flush()
                except OSError:  # the sender is gone (killed mid-delivery)
                    self.close_connection = True
                    return
                received.answered = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = serve(self.port, Handler)
        return self

    def stop(self) -> None:
        self.released.set()
        shut(self.server)
        self.server = None

    def verified(self, secret: str) -> list[Any]:
        """Every request's body, each checked with the standardwebhooks library (raises on a bad signature)."""
        return [Webhook(secret).verify(r.body, r.headers) for r in self.requests]

    def ids(self) -> list[str]:
        return [r.headers["webhook-id"] for r in self.requests]

    def answered_ids(self) -> list[str]:
        """The webhook-id of each request whose whole answer went out: the deliveries the sender saw succeed."""
        return [r.headers["webhook-id"] for r in self.requests if r.answered]


def serve(port: int, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """A threaded HTTP server on 127.0.0.1:`port`, serving from a daemon thread until `shut`."""
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def shut(server: ThreadingHTTPServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    """A port nothing listens on (yet): a receiver that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
