"""Template context of every console page."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest

from ..principals import principal_of
from .access import holds_operator


def operator_nav(request: HttpRequest) -> dict[str, Callable[[], bool]]:
    """Whether to show the Webhooks entry: a callable, so only a page that renders the nav asks.

    The console views have already read the principal (principal_of caches it
    on the request), so the nav costs no query there; admin pages never ask.
    """
    return {"holds_operator": lambda: holds_operator(principal_of(request))}


def sign_in(request: HttpRequest) -> dict[str, object]:
    """What the console's and the admin's sign-in pages offer (docs/identity.md): the provider, passwords, or both."""
    return {
        "sso_provider": settings.OIDC_PROVIDER_NAME if settings.OIDC_ISSUER else "",
        "password_sign_in": settings.PASSWORD_SIGN_IN,
    }
