"""Bearer tokens: stored as SHA-256, shown once, revocable."""

from datetime import timedelta
from typing import Any

from django.http import HttpRequest
from django.utils import timezone
from rest_framework import HTTP_HEADER_ENCODING, authentication, exceptions
from rest_framework.request import Request

from ..models import ApiToken
from ..principals import Principal, for_token, has_staff_access, principal_of  # noqa: F401 (re-exported)
from ..tokens import LiveToken, hash_token, live_token
from .errors import BEARER_CHALLENGE

# last_used_at is a hint for humans; writing it on every request would turn
# every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`; an unknown, revoked or expired token is 401 unauthenticated.

    Listed first in DEFAULT_AUTHENTICATION_CLASSES: DRF asks the first class
    for the WWW-Authenticate challenge, so a request with no credentials at
    all is a 401 that names Bearer, not a 403.
    """

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Principal, LiveToken] | None:
        return self.read(request)

    def read(self, request: Request | HttpRequest) -> tuple[Principal, LiveToken] | None:
        """The bearer token of this request, looked up now: None without one, AuthenticationFailed if not live."""
        header = authorization_header(request).split()
        if not header or header[0].lower() != b"bearer":
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        try:
            secret = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The token is not valid.") from None
        # Read on every request, so a revocation counts from the next one; the database
        # clock decides expiry, in the same statement. One message for unknown, revoked
        # and expired, so a probe learns nothing about a secret.
        token = live_token(hash_token(secret))
        if token is None:
            raise exceptions.AuthenticationFailed("The token is not valid, was revoked or has expired.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return for_token(token), token

    def authenticate_header(self, request: Request) -> str:
        return BEARER_CHALLENGE


def authorization_header(request: Request | HttpRequest) -> bytes:
    """DRF's get_authorization_header, read from META: `request.headers` would build the whole header map first."""
    value = request.META.get("HTTP_AUTHORIZATION", b"")
    return value.encode(HTTP_HEADER_ENCODING) if isinstance(value, str) else value


class StaffSessionAuthentication(authentication.SessionAuthentication):
    """The console's session, for an active staff user only (docs/decisions.md, "Trust boundaries"); anyone else is 403
    forbidden.

    principals.for_user already grants such a user nothing; refusing here as
    well tells a demoted user why nothing works instead of showing empty lists.
    """

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        found = super().authenticate(request)
        if found is not None and not has_staff_access(found[0]):
            raise exceptions.PermissionDenied("The session API needs an active staff account.")
        return found
