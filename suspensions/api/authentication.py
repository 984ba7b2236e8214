"""Bearer tokens: stored as SHA-256, shown once, revocable."""

import secrets
from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from .. import digests
from ..models import ApiToken
from ..principals import Principal, for_token, for_user

TOKEN_PREFIX = "sus_"
# last_used_at is a hint for humans; writing it on every request would turn
# every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_token(secret: str) -> str:
    return digests.sha256_hex(secret)


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Principal, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != b"bearer":
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        try:
            secret = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The token is not valid.") from None
        token = ApiToken.objects.filter(token_hash=hash_token(secret), revoked=False).first()
        if token is None:
            raise exceptions.AuthenticationFailed("The token is not valid or was revoked.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return for_token(token), token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def principal_of(request: Any) -> Principal:
    """The principal behind a request: a token's, or a logged-in staff user's memberships."""
    user = request.user
    if isinstance(user, Principal):
        return user
    if user is None or not user.is_authenticated:
        return Principal(name="anonymous", is_authenticated=False)
    cached = getattr(request, "_suspensions_principal", None)
    if cached is None:
        cached = for_user(user)
        request._suspensions_principal = cached
    return cached
