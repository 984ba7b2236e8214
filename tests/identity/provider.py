"""A real OpenID Provider for the sign-in tests: oidc-provider-mock, served from a thread on a free port.

It answers discovery, the authorization form (a `sub` typed in), the token
endpoint (authorization code and refresh token grants), the JWKS and userinfo,
and two test doors: PUT /users/<sub> sets a person's claims, and
POST /users/<sub>/revoke-tokens disables them (their access and refresh tokens stop).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
from oidc_provider_mock import run_server_in_thread

CLIENT_ID = "suspensions-tests"
CLIENT_SECRET = "a-client-secret"


@contextmanager
def provider(**options: Any) -> Iterator[str]:
    """The issuer URL of a provider running until the block ends."""
    with run_server_in_thread(port=0, **options) as server:
        yield f"http://localhost:{server.server_port}"


def person(issuer: str, sub: str, **claims: Any) -> None:
    """Set what the provider says of `sub` (email, email_verified, groups, preferred_username...)."""
    response = requests.put(f"{issuer}/users/{sub}", json=claims, timeout=10)
    assert response.status_code == 204, response.text


def disable(issuer: str, sub: str) -> None:
    """What disabling a person at the provider does to this service: their tokens are refused from now on."""
    response = requests.post(f"{issuer}/users/{sub}/revoke-tokens", timeout=10)
    assert response.status_code == 204, response.text


def authorize(authorization_url: str, sub: str) -> str:
    """Submit the provider's form as `sub`; the callback URL (path and query) it sends the browser back to."""
    response = requests.post(authorization_url, data={"sub": sub}, allow_redirects=False, timeout=10)
    assert response.status_code in (302, 303), response.text[:500]
    location = urlsplit(response.headers["Location"])
    return f"{location.path}?{location.query}"


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def configure(settings: Any, issuer: str, **more: Any) -> None:
    """Single sign-on on, against `issuer`, as OIDC_ISSUER and friends would set it at start-up."""
    settings.OIDC_ISSUER = issuer
    settings.OIDC_CLIENT_ID = CLIENT_ID
    settings.OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_PROVIDER_NAME = "Test IdP"
    settings.AUTHENTICATION_BACKENDS = ["suspensions.logins.LockoutBackend", "suspensions.oidc.ProviderBackend"]
    for name, value in more.items():
        setattr(settings, name, value)


EXPIRED = {"access_token_max_age": timedelta(seconds=-300)}
