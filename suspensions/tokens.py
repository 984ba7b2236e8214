"""API tokens: creation (one place for the command, the admin and the tests) and the lookup of a live one."""

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import connection

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
    token to the person it acts for (separation of duties: docs/policies.md, "Quorum and separation of duties").
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


_TOKENS = ApiToken._meta.db_table
_USERS = ApiToken._meta.get_field("user").related_model._meta.db_table  # type: ignore[union-attr]
# The one hand-written statement outside services/sql/: authentication runs below the services, on
# every request, and the ORM's compiling of this query cost 1.8 ms of CPU against 0.2 for the text
# (docs/performance.md, "Where the time goes"). It reads LiveToken's fields, in order (a test holds them).
# The database clock decides expiry; a token linked to a user acts only while the user is active.
LIVE_TOKEN_SQL = (
    f"SELECT t.id, t.name, t.scope, t.roles, t.user_id, t.last_used_at, u.is_staff"
    f" FROM {_TOKENS} t LEFT JOIN {_USERS} u ON u.id = t.user_id"
    " WHERE t.token_hash = %s AND NOT t.revoked"
    " AND (t.expires_at IS NULL OR t.expires_at > STATEMENT_TIMESTAMP())"
    " AND (t.user_id IS NULL OR u.is_active)"
)


def live_token(token_hash: str) -> LiveToken | None:
    """The unrevoked, unexpired token with this hash, of no user or an active one, read on every request.

    Read on every request, a revocation or a deactivation counts at once:
    one indexed SELECT (token_hash is unique) of the columns a request needs.
    """
    with connection.cursor() as cursor:
        cursor.execute(LIVE_TOKEN_SQL, [token_hash])
        row = cursor.fetchone()
    return LiveToken(*row) if row is not None else None
