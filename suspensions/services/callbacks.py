"""Callback URLs (docs/api.md, "Callback URLs: `POST /callbacks/{token}`"): a signed capability that resumes one pause
without an API token.

A pause stored with `callback: true` answers a `callback_url` whose last
segment is a token signed with the secret key (django.core.signing, its own
salt), naming the run, the pause and the pause's deadline. A POST of the
one-shot resume body to it resumes that pause through the one-shot resume's
door (resumes.OneShot), exactly as the engine's resume would: same digests,
bounds, receipts and replays. Whatever does not prove itself (a tampered
token, a body naming another pause) is a 404, never a 401 or 403: the URL is
the capability, and a wrong one names nothing. A genuine token past its
pause's deadline is `410 suspension_expired`, as the engine's own resume
would be, whether or not the sweep has run (docs/api.md §4).

Single use follows from the pause: once resumed, the identical body again
is its replay (200) and another body is admission_conflict (409). A pause
without a deadline gets a token without one, good while the pause is.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.core import signing

from .. import digests
from ..exceptions import NotFound, SuspensionExpired
from ..models import Suspension
from ..observability import metrics
from ..principals import Principal
from .claiming import through
from .claims import Claimed, Locked, Version
from .resumes import OneShot, Resumable

SALT = "suspensions.callback"
# The actor written on the events and the admission of a resume by callback URL.
ACTOR = "callback"
# The token is the capability: the door checks it against the locked run instead of a role.
CALLER = Principal(name=ACTOR, superuser=True)


@dataclass(frozen=True)
class Grant:
    """What a valid token names: the run, the pause, and the deadline (None: the pause has none)."""

    run_id: UUID
    suspension_id: UUID
    expires_at: datetime | None


def callback_token(suspension: Suspension) -> str:
    """The signed token of `suspension`'s callback URL."""
    expires = digests.rfc3339(suspension.expires_at)
    return signing.dumps({"r": str(suspension.run_id), "s": str(suspension.id), "e": expires}, salt=SALT)


def grant_of(token: str) -> Grant:
    """The grant a token names; 404 for anything that is not a token this service signed."""
    try:
        payload = signing.loads(token, salt=SALT)
        expires = payload["e"]
        return Grant(
            run_id=UUID(payload["r"]),
            suspension_id=UUID(payload["s"]),
            expires_at=None if expires is None else datetime.fromisoformat(expires),
        )
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise NotFound("no such callback") from None


@dataclass(frozen=True)
class CallbackResume(OneShot):
    """T3 by callback URL: the one-shot resume, its actor check replaced by the token's."""

    grant: Grant = field(kw_only=True)

    def admits(self, t: Locked) -> None:
        grant = self.grant
        if self.version.suspension_id != grant.suspension_id or t.run.id != grant.run_id:
            raise NotFound("no such callback")  # a body naming another pause: the token does not cover it
        # No reason check: only external_tool pauses get a callback URL (wire.requests.Suspend).

    def check(self, t: Locked, live: Suspension) -> Resumable:
        grant = self.grant
        if grant.expires_at is not None and grant.expires_at <= t.now:
            raise SuspensionExpired(f"pause {grant.suspension_id} expired at {digests.rfc3339(grant.expires_at)}")
        return super().check(t, live)  # the pause's own deadline, as the one-shot resume checks it


@metrics.counted_claim("one_shot")
def resume_by_callback(
    *,
    token: str,
    version: Version,
    results: list[dict[str, Any]],
    engine_version: str | None = None,
    accept_drift: bool = False,
) -> Claimed:
    """T3 one-shot resume of the pause a callback token names (docs/api.md, "Callback URLs: `POST /callbacks/{token}`");
    404 for a token that does not hold.

    Locks the run; then as resume_run: the identical request again is its replay.
    """
    grant = grant_of(token)
    if version.run_id != grant.run_id:
        raise NotFound("no such callback")
    door = CallbackResume.asked(version, results, engine_version=engine_version, accept_drift=accept_drift, grant=grant)
    return through(door, principal=CALLER, run_id=grant.run_id)
