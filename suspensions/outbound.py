"""One webhook POST leaving the process (docs/api.md, "Retries and guarantees"): the address check, the signature, the
send.

No database here and no retries: `services.delivery` claims a batch of an
endpoint's messages, sends them through one `Sender` outside any
transaction, and records what it returns.

The address is checked where it is used. The host is resolved here, each
answer is checked (loopback, private, link-local, multicast, reserved and
unspecified addresses are refused unless WEBHOOK_ALLOW_PRIVATE is on; cloud
metadata addresses always), and the request connects to the checked address
itself, with the name in the Host header and, for https, as the TLS server
name (SNI and certificate check). A DNS answer that changes between the
check and the connection (rebinding) therefore cannot move the request.
"""

import functools
import ipaddress
import socket
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

import certifi
import httpx
from django.conf import settings
from standardwebhooks.webhooks import Webhook

# docs/api.md, "Retries and guarantees": a 2xx within 10 s is delivered. httpx applies it to each phase (connect, write,
# read); the delivery task's time limit bounds a receiver that trickles its answer.
TIMEOUT = httpx.Timeout(10.0)
# Instance metadata services: never a webhook receiver, whatever WEBHOOK_ALLOW_PRIVATE says.
METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "169.254.170.2")
)
USER_AGENT = "suspensions-webhooks/1"
ERROR_CHARS = 500

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """The URL may not be called: its scheme, or every address its host resolves to."""


@dataclass(frozen=True)
class Outcome:
    """One attempt: the status code (None when no answer came) or the error, and its duration."""

    status_code: int | None
    error: str
    duration_ms: int

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


# IETF protocol assignments (192.0.0.0/24): Python counts only parts of it as private (issue 32).
PROTOCOL_ASSIGNMENTS = ipaddress.ip_network("192.0.0.0/24")
# NAT64's well-known prefix: its last 32 bits are the IPv4 address the gateway connects to.
NAT64 = ipaddress.ip_network("64:ff9b::/96")


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and leads to: mapped, 6to4 (2002::/16) or NAT64; else None."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress, *, allow_private: bool) -> str:
    """Why `address` may not be called ("" if it may).

    An IPv6 address that carries an IPv4 one is judged as that one: 6to4
    `2002:7f00:1::` is loopback, `2002:a9fe:a9fe::` the metadata service.
    """
    address = embedded_ipv4(address) or address
    if address in METADATA:
        return "a cloud metadata address"
    if allow_private:
        return ""
    for kind in ("loopback", "link_local", "multicast", "private", "reserved", "unspecified"):
        if getattr(address, f"is_{kind}"):
            return f"a {kind.replace('_', '-')} address"
    if address in PROTOCOL_ASSIGNMENTS:
        return "an IETF protocol assignment address"
    # What is left and still not global (e.g. 100.64.0.0/10, shared address space) is not the internet either.
    return "" if address.is_global else "not a public address"


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to for a TCP connection, in the resolver's order."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(f"cannot resolve {host}: {exc}") from None
    found: list[IPAddress] = []
    for info in infos:
        # An IPv6 link-local answer carries its zone ("fe80::1%eth0").
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if address not in found:
            found.append(address)
    return found


def checked_address(url: str, *, allow_private: bool | None = None) -> IPAddress:
    """The address a request to `url` will connect to: the first one the host resolves to that may be called.

    Raises Refused for a scheme other than http(s), a missing host, or a host
    whose every address is refused.
    """
    allow = settings.WEBHOOK_ALLOW_PRIVATE if allow_private is None else allow_private
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("only http and https URLs with a host are called")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = resolve(parts.hostname, port)
    reasons = []
    for address in addresses:
        why = refusal(address, allow_private=allow)
        if not why:
            return address
        reasons.append(f"{address} is {why}")
    raise Refused(f"refused: {parts.hostname} resolves to {'; '.join(reasons) or 'nothing'}")


def signature_headers(message_id: str, body: str, secrets: Sequence[str], at: datetime) -> dict[str, str]:
    """Standard Webhooks headers: one `v1,` signature per secret, space-separated (a rotated secret signs too)."""
    at = at.astimezone(UTC)
    signatures = " ".join(Webhook(secret).sign(message_id, at, body) for secret in secrets)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signatures,
    }


@functools.cache
def _tls() -> ssl.SSLContext:
    """One verifying TLS context per process, shared by every send (thread-safe).

    httpx builds a new one, loading the whole certificate store, for every
    client it opens: about 20 ms of each delivery, for http:// receivers too.
    """
    # The same trust store httpx would load (certifi's), built once.
    return ssl.create_default_context(cafile=certifi.where())


class Sender:
    """POSTs to one URL over one kept-alive connection: a delivery batch's messages to its endpoint.

    The address is checked (and the client opened) at the first `post`, so a
    refused or unresolvable URL is that post's outcome, like any other; every
    later post of the batch goes to the same checked address, and reuses the
    connection while the receiver keeps it open. Use as a context manager.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._client: httpx.Client | None = None
        self._target: tuple[httpx.URL, str, dict[str, str]] | None = None

    def __enter__(self) -> "Sender":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _open(self) -> tuple[httpx.URL, str, dict[str, str]]:
        if self._target is None:
            address = checked_address(self.url)
            parts = urlsplit(self.url)
            assert parts.hostname is not None
            request_url = httpx.URL(self.url).copy_with(host=str(address))
            # The name the receiver's virtual host expects, not the address we connect to.
            host = parts.netloc.rsplit("@", 1)[-1]
            extensions = {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
            # trust_env off: a proxy from the environment would connect to the name, not the checked address.
            self._client = httpx.Client(timeout=TIMEOUT, follow_redirects=False, trust_env=False, verify=_tls())
            self._target = (request_url, host, extensions)
        return self._target

    def post(self, body: str, headers: dict[str, str]) -> Outcome:
        """POST `body`, redirects not followed; never raises for the receiver's faults (they are the Outcome)."""
        began = time.monotonic()
        try:
            request_url, host, extensions = self._open()
            assert self._client is not None
            sent = {"content-type": "application/json", "user-agent": USER_AGENT, **headers, "host": host}
            response = self._client.post(request_url, content=body.encode("utf-8"), headers=sent, extensions=extensions)
            return Outcome(response.status_code, _error_of(response), _ms(began))
        except Refused as exc:
            return Outcome(None, str(exc)[:ERROR_CHARS], _ms(began))
        except Exception as exc:  # noqa: BLE001 - every failure to get an answer is this attempt's error, recorded
            return Outcome(None, f"{type(exc).__name__}: {exc}"[:ERROR_CHARS], _ms(began))


def post(url: str, body: str, headers: dict[str, str]) -> Outcome:
    """One POST of `body` to `url` at its checked address (a Sender of one message)."""
    with Sender(url) as sender:
        return sender.post(body, headers)


def _error_of(response: httpx.Response) -> str:
    if 200 <= response.status_code < 300:
        return ""
    if 300 <= response.status_code < 400:
        return f"redirect to {response.headers.get('location', '?')} not followed"[:ERROR_CHARS]
    return f"HTTP {response.status_code}"


def _ms(began: float) -> int:
    return int((time.monotonic() - began) * 1000)
