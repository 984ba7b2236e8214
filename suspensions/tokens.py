"""API token creation: one place for the command, the admin and the tests."""

from collections.abc import Iterable

from .api.authentication import hash_token, new_secret
from .models import ApiToken


def create_token(*, scope: str, roles: Iterable[str], name: str) -> tuple[ApiToken, str]:
    """Create a token and return it with its secret, which is never stored."""
    secret = new_secret()
    token = ApiToken(name=name, roles=",".join(sorted(set(roles))), token_hash=hash_token(secret), prefix=secret[:10])
    token.stamp_scope(scope)
    token.save(force_insert=True)
    return token, secret
