"""One-click links in approver emails (docs/notifications.md, "Email"): a signed capability for one approver, approval
and decision.

The token is django.core.signing over {user, approval, run, decision,
revision, expiry} with its own salt: nobody can forge or alter one without
SECRET_KEY, and one minted for approve never denies. It carries the version
the email showed (the run's revision then), so a link to a pause that moved
on is stale, never applied to a newer one. It expires at the approval's
deadline (a pause without one: LINK_DAYS after the email). It is single use
through the decision itself: once its approver voted, or the approval was
decided, the page says so and nothing is written (console/act.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.core import signing
from django.urls import reverse

SALT = "suspensions.email-links.v1"
DECISIONS = ("approve", "deny")
# A pause without a deadline: its links still stop working after this long.
LINK_DAYS = 14


@dataclass(frozen=True)
class Capability:
    user_id: int
    approval_id: UUID
    run_id: UUID
    decision: str
    revision: int
    expires_at: datetime

    def expired(self, now: datetime) -> bool:
        return now >= self.expires_at


def mint(*, user_id: int, approval_id: UUID, run_id: UUID, decision: str, revision: int, expires_at: datetime) -> str:
    """The signed token of one approver's one decision on one approval at one revision."""
    assert decision in DECISIONS
    payload = {
        "u": user_id,
        "a": str(approval_id),
        "r": str(run_id),
        "d": decision,
        "v": revision,
        "e": int(expires_at.timestamp()),
    }
    return signing.dumps(payload, salt=SALT, compress=True)


def read(token: str) -> Capability | None:
    """The capability a token carries; None for anything tampered, truncated or not ours."""
    try:
        p = signing.loads(token, salt=SALT)
        return Capability(
            user_id=int(p["u"]),
            approval_id=UUID(p["a"]),
            run_id=UUID(p["r"]),
            decision=p["d"] if p["d"] in DECISIONS else "",
            revision=int(p["v"]),
            expires_at=datetime.fromtimestamp(int(p["e"]), tz=UTC),
        )
    except (signing.BadSignature, KeyError, TypeError, ValueError, AttributeError):
        return None


def links(
    *, user_id: int, approval_id: UUID, run_id: UUID, revision: int, deadline: datetime | None, now: datetime
) -> dict[str, str]:
    """{decision: absolute URL} of the Approve and Deny links (CONSOLE_BASE_URL) for one approver's email."""
    expires_at = deadline or now + timedelta(days=LINK_DAYS)
    out = {}
    for decision in DECISIONS:
        token = mint(
            user_id=user_id,
            approval_id=approval_id,
            run_id=run_id,
            decision=decision,
            revision=revision,
            expires_at=expires_at,
        )
        out[decision] = settings.CONSOLE_BASE_URL + reverse("console:act", args=[token])
    return out
