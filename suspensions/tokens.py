"""API token creation: one place for the command, the admin and the tests."""

import secrets
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from . import digests
from .models import ApiToken

TOKEN_PREFIX = "sus_"


def hash_token(secret: str) -> str:
    """Tokens are stored as their SHA-256; the secret itself is shown once and never kept."""
    return digests.sha256_hex(secret)


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def create_token(
    *, scope: str, roles: Iterable[str], name: str, expires_at: datetime | None = None, user: Any = None
) -> tuple[ApiToken, str]:
    """Create a token and return it with its secret, which is never stored.

    `expires_at=None` makes a token that never expires; past `expires_at` the
    API answers it 401 unauthenticated, like a revoked one. `user` links the
    token to the person it acts for (separation of duties, DESIGN §15).
    """
    secret = new_secret()
    token = ApiToken(
        name=name,
        roles=",".join(sorted(set(roles))),
        token_hash=hash_token(secret),
        prefix=secret[:10],
        expires_at=expires_at,
        user=user,
    )
    token.stamp_scope(scope)
    token.save(force_insert=True)
    return token, secret
