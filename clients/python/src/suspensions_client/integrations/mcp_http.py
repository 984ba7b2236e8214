"""The HTTP transport's gate for `suspensions-mcp` (mcp_server.py): its own bearer token, or loopback only."""

from __future__ import annotations

import hmac
import ipaddress
import json

from starlette.types import ASGIApp, Receive, Scope, Send


class BearerGate:
    """An ASGI wrapper: every HTTP request (session creation included) needs `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.allows(scope):
            await unauthorized(send)
            return
        await self.app(scope, receive, send)

    def allows(self, scope: Scope) -> bool:
        headers = dict(scope.get("headers") or [])
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        # Compared in constant time, so the answer's timing tells nothing of the token.
        return hmac.compare_digest(given.strip(), self.expected) and scheme.lower() == b"bearer"


async def unauthorized(send: Send) -> None:
    body = json.dumps({"error": "unauthorized", "detail": "this MCP server wants its bearer token"}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="suspensions-mcp"'),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere
