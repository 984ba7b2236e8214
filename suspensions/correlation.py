"""Correlation ids, store hints, user ids, reply-scope hashes and store keys
(docs/decisions.md, "Correlation-keyed waits"). Pure functions.

A flow runtime identifies a parked wait by the key its resume store would
derive from the inbound envelope; the correlation id carries everything
needed to derive that key again:

    <hint>::pack=<pack>::flow=<flow>[::thread=<t>][::reply=<r>][::n=<nonce>]

`<hint>` is the bare hint the store hint was built from: the envelope's
session hint when it has one, else the canonical
`<tenant>:<provider>:<channel>:<conversation>:<user>`. The conversation of the
reply scope is read back from the hint's fourth `:`-segment, so a session hint
must carry it there to be resumable (the park checks this).
"""

import hashlib
import re
from dataclasses import dataclass

NONCE = re.compile(r"[0-9a-f]{32}")
# Stripped from the end in this order, each on its last occurrence (docs/decisions.md, "Correlation-keyed waits").
STRIP_ORDER = ("n", "reply", "thread", "flow", "pack")


def canonical_hint(*, tenant: str, provider: str, channel: str, conversation: str, user: str) -> str:
    return f"{tenant}:{provider}:{channel}:{conversation}:{user}"


def store_hint(*, hint: str, pack: str | None) -> str:
    """The bare hint with `::pack=<pack>` appended once (nothing when there is no pack)."""
    return f"{hint}::pack={pack}" if pack else hint


def bare_hint(*, canonical: str, session_hint: str | None) -> str:
    """The session hint when the envelope has one, else the canonical hint."""
    return session_hint or canonical


def user_id(store_hint: str) -> str:
    """`sess` + hex of the first 8 bytes of SHA-256(store hint)."""
    return "sess" + hashlib.sha256(store_hint.encode("utf-8")).digest()[:8].hex()


def scope_hash(*, conversation: str, thread: str | None, reply_to: str | None) -> str:
    """Hex SHA-256 over `conversation\\nthread\\nreply_to\\n`; the correlation part after the last newline is empty."""
    text = f"{conversation}\n{thread or ''}\n{reply_to or ''}\n"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def store_key(*, store_hint: str, scope_hash: str) -> str:
    return f"{store_hint}::{scope_hash}"


def conversation_of(hint: str) -> str:
    """The fourth segment of a canonical hint; empty when the hint has fewer than five."""
    parts = hint.split(":")
    return parts[3] if len(parts) >= 5 else ""


def is_nonce(value: str | None) -> bool:
    return value is not None and NONCE.fullmatch(value) is not None


@dataclass(frozen=True)
class Correlation:
    """A correlation id taken apart; absent markers are None."""

    hint: str
    pack: str | None = None
    flow: str | None = None
    thread: str | None = None
    reply: str | None = None
    nonce: str | None = None

    @property
    def resumable(self) -> bool:
        """Without pack and flow the wait can be neither keyed nor routed."""
        return bool(self.pack and self.flow)

    @property
    def store_hint(self) -> str:
        return store_hint(hint=self.hint, pack=self.pack)

    @property
    def user_id(self) -> str:
        return user_id(self.store_hint)

    @property
    def scope_hash(self) -> str:
        return scope_hash(conversation=conversation_of(self.hint), thread=self.thread, reply_to=self.reply)

    @property
    def store_key(self) -> str:
        """The key of the parked wait; the nonce never takes part in it."""
        return store_key(store_hint=self.store_hint, scope_hash=self.scope_hash)


def build(c: Correlation) -> str:
    """The correlation id of `c`; each marker is omitted when its value is empty."""
    text = c.hint
    for marker in reversed(STRIP_ORDER):
        value = getattr(c, "nonce" if marker == "n" else marker)
        if value:
            text += f"::{marker}={value}"
    return text


def _strip(text: str, marker: str) -> tuple[str, str | None]:
    head, sep, value = text.rpartition(f"::{marker}=")
    if not sep or not value or (marker == "n" and not is_nonce(value)):
        return text, None
    return head, value


def parse(correlation_id: str) -> Correlation:
    """Strip the markers from the end in the order n, reply, thread, flow, pack; the rest is the hint."""
    values: dict[str, str | None] = {}
    text = correlation_id
    for marker in STRIP_ORDER:
        text, values["nonce" if marker == "n" else marker] = _strip(text, marker)
    return Correlation(hint=text, **values)
