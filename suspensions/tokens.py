"""API tokens: creation (one place for the command, the admin and the tests) and the lookup of a live one."""

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db.models import Q
from django.db.models.functions import Now

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


@dataclass(frozen=True)
class LiveToken:
    """What authentication needs of a live token: who it is, what it holds, when it was last used.

    `user_staff`: whether the user the token acts for has staff status (None
    for a token linked to no one); the people's roles need it (principals.py).
    """

    id: UUID
    name: str
    scope: str
    roles: str
    user_id: int | None
    last_used_at: datetime | None
    user_staff: bool | None = None

    @property
    def pk(self) -> UUID:
        return self.id


LIVE_TOKEN_COLUMNS = ("id", "name", "scope", "roles", "user_id", "last_used_at", "user__is_staff")


def live_token(token_hash: str) -> LiveToken | None:
    """The unrevoked, unexpired token with this hash, of no user or an active one, read on every request.

    Read on every request, a revocation or a deactivation counts at once.

    One indexed SELECT (token_hash is unique) of the columns a request needs,
    no model instance; the database clock decides expiry (Now() is
    STATEMENT_TIMESTAMP()).
    """
    live = (Q(expires_at__isnull=True) | Q(expires_at__gt=Now())) & (Q(user__isnull=True) | Q(user__is_active=True))
    query = ApiToken.objects.filter(live, token_hash=token_hash, revoked=False)
    row = query.values_list(*LIVE_TOKEN_COLUMNS).first()
    return LiveToken(*row) if row is not None else None
