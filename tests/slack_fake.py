"""A local fake of Slack for the tests: its Web API on 127.0.0.1, and interactions signed the way Slack signs them.

`FakeSlack` is a real HTTP server in a thread (settings.SLACK_API_URL points
at it) answering the Web API methods the service calls like Slack does
(`{"ok": true, ...}`), recording every call (method, arguments from the
query, form or JSON body, and the bearer token). A test sets the profile
emails `users.info` answers with, and may script failures per method.

`post_interaction` sends a payload to the service as Slack does: a form
body `payload=<json>`, `X-Slack-Request-Timestamp` and `X-Slack-Signature:
v0=` HMAC-SHA256 of `v0:{timestamp}:{body}` under the signing secret.
"""

import hashlib
import hmac
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from django.test import TestCase

from tests.push.receivers import free_port, serve, shut

INTERACTIONS_PATH = "/integrations/slack/interactions"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    token: str
    answer: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeSlack:
    port: int = field(default_factory=free_port)
    # users.info: Slack member id -> the profile's email (absent: user_not_found).
    emails: dict[str, str] = field(default_factory=dict)
    # method -> Slack error codes to answer, one per call, before answering ok again.
    failures: dict[str, list[str]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    # method -> seconds the fake waits before answering it (a slow Slack).
    delays: dict[str, float] = field(default_factory=dict)
    server: Any = None
    _ts: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def of(self, method: str) -> list[Call]:
        """The recorded calls of one method, in order."""
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            scripted = self.failures.get(method)
            if scripted:
                return {"ok": False, "error": scripted.pop(0)}
            ts = f"1700000000.{next(self._ts):06d}"
        channel = args.get("channel", "")
        if method == "chat.postMessage":
            return {"ok": True, "channel": channel, "ts": ts, "message": {"text": args.get("text", "")}}
        if method == "chat.update":
            return {"ok": True, "channel": channel, "ts": args.get("ts"), "text": args.get("text", "")}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": ts}
        if method == "views.open":
            return {"ok": True, "view": {"id": f"V{ts.replace('.', '')}"}}
        if method == "users.info":
            user = args.get("user", "")
            if user not in self.emails:
                return {"ok": False, "error": "user_not_found"}
            return {"ok": True, "user": {"id": user, "profile": {"email": self.emails[user]}}}
        return {"ok": False, "error": "unknown_method"}

    def start(self) -> "FakeSlack":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.handle_call(b"")

            def do_POST(self) -> None:  # noqa: N802
                self.handle_call(self.rfile.read(int(self.headers.get("content-length", "0"))))

            def handle_call(self, body: bytes) -> None:
                parts = urlsplit(self.path)
                method = parts.path.rsplit("/", 1)[-1]
                args: dict[str, Any] = dict(parse_qsl(parts.query))
                if "json" in self.headers.get("content-type", ""):
                    args.update(json.loads(body or b"{}"))
                elif body:
                    args.update(parse_qsl(body.decode()))
                token = self.headers.get("authorization", "").removeprefix("Bearer ")
                time.sleep(fake.delays.get(method, 0))
                answered = fake.answer(method, args)
                with fake._lock:
                    fake.calls.append(Call(method, args, token, answered))
                answer = json.dumps(answered).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = serve(self.port, Handler)
        return self

    def stop(self) -> None:
        shut(self.server)
        self.server = None


def signed_headers(body: str, secret: str, timestamp: int | None = None) -> dict[str, str]:
    """Slack's two headers for `body`, as Django test client keyword arguments."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": ts, "HTTP_X_SLACK_SIGNATURE": f"v0={digest}"}


def form_body(payload: dict[str, Any]) -> str:
    """The form body Slack posts for an interaction: one field, `payload`, holding the JSON."""
    return urlencode({"payload": json.dumps(payload)})


def post_interaction(
    client: Any, payload: dict[str, Any], secret: str, *, timestamp: int | None = None, headers: Any = None
) -> Any:
    """POST `payload` to the interactions endpoint the way Slack does; `headers` replaces the signed ones."""
    body = form_body(payload)
    signed = signed_headers(body, secret, timestamp) if headers is None else headers
    # What the request enqueues once it commits (the answers sent after it) is enqueued, as in production,
    # also inside a test's transaction.
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(INTERACTIONS_PATH, data=body, content_type="application/x-www-form-urlencoded", **signed)


def button_press(message_call: Call, action_id: str, user: str, *, trigger_id: str = "T-1") -> dict[str, Any]:
    """The `block_actions` payload of `user` pressing `action_id` on the message a chat.postMessage posted."""
    button = next(
        element
        for block in message_call.args["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
        if element.get("action_id") == action_id
    )
    channel, ts = message_call.args["channel"], message_call.answer.get("ts", "")
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "trigger_id": trigger_id,
        "channel": {"id": channel},
        "container": {"type": "message", "channel_id": channel, "message_ts": ts},
        "message": {"ts": ts},
        "actions": [{"action_id": action_id, "value": button.get("value", ""), "type": "button"}],
    }


def deny_submission(views_open_call: Call, user: str, reason: str) -> dict[str, Any]:
    """The `view_submission` payload of `user` submitting the deny modal views.open opened, with `reason`."""
    view = views_open_call.args["view"]
    if isinstance(view, str):
        view = json.loads(view)
    block = next(b for b in view["blocks"] if b["type"] == "input")
    typed = {"type": "plain_text_input", "value": reason}
    return {
        "type": "view_submission",
        "user": {"id": user},
        "view": {
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {"values": {block["block_id"]: {block["element"]["action_id"]: typed}}},
        },
    }
