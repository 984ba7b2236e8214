"""Sealed links to one approval's console page, for an agent to hand its person (docs/api.md, "`POST
/approvals/{id}/link`"): what `suspensions-mcp` sends as an MCP URL-mode elicitation.

The token is the approval, its run, the run's revision when minted and an
expiry, sealed with DATA_ENCRYPTION_KEYS (suspensions/keys.py, Fernet:
encrypted and authenticated), so the agent that carries it can neither read
nor alter what it points at. Unlike an email link (email_links.py) it names
no approver and decides nothing by itself: it opens the approval page to a
signed-in approver of its scope (console/open_link.py), who decides there as
on any approval. It is single use through the decision: once the approval is
decided, or the run moved past the revision it was minted at, the link is
refused, and so is a tampered or expired one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from cryptography.fernet import InvalidToken

from . import keys

PURPOSE = "approval-link.v1"  # a sealed value of another purpose (a webhook secret) is never a link
# A link outlives neither its approval's deadline nor this: an agent's elicitation is answered today or not at all.
LINK_HOURS = 24


@dataclass(frozen=True)
class Link:
    approval_id: UUID
    run_id: UUID
    revision: int
    expires_at: datetime

    def expired(self, now: datetime) -> bool:
        return now >= self.expires_at


def expiry(deadline: datetime | None, now: datetime) -> datetime:
    """When a link minted `now` stops working: the approval's deadline, at most LINK_HOURS ahead."""
    latest = now + timedelta(hours=LINK_HOURS)
    return min(deadline, latest) if deadline is not None else latest


def mint(link: Link) -> str:
    """The sealed token of `link` (URL-safe base64: it goes in a path as it is)."""
    payload = {
        "p": PURPOSE,
        "a": str(link.approval_id),
        "r": str(link.run_id),
        "v": link.revision,
        "e": int(link.expires_at.timestamp()),
    }
    return keys.fernet().encrypt(json.dumps(payload, separators=(",", ":")).encode()).decode("ascii")


def read(token: str) -> Link | None:
    """What a token seals; None for anything tampered, truncated, sealed for another purpose or not ours."""
    try:
        p = json.loads(keys.fernet().decrypt(token.encode("ascii")))
        if p["p"] != PURPOSE:
            return None
        expires_at = datetime.fromtimestamp(int(p["e"]), tz=UTC)
        return Link(approval_id=UUID(p["a"]), run_id=UUID(p["r"]), revision=int(p["v"]), expires_at=expires_at)
    except (InvalidToken, UnicodeError, ValueError, KeyError, TypeError, OverflowError):
        return None
