"""Who may provision (docs/identity.md, "Provisioning (SCIM) and leavers"): a live API token holding `provisioner`.

django-scim2 wraps each of its views in this check (AUTH_CHECK_MIDDLEWARE).
The token is read as the API reads it (tokens.live_token, on every request),
so revoking the provider's token stops it at once. Refusals are SCIM error bodies.
"""

import json
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django_scim.constants import SCIM_CONTENT_TYPE
from django_scim.exceptions import SCIMException

from ..models import Role
from ..principals import Principal, for_token
from ..tokens import hash_token, live_token


def refusal(error: SCIMException) -> HttpResponse:
    response = HttpResponse(json.dumps(error.to_dict()), content_type=SCIM_CONTENT_TYPE, status=error.status)
    if error.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="scim"'
    return response


def bearer(request: HttpRequest) -> Principal | None:
    """The principal of a live bearer token, or None for no token, a malformed header or a dead token."""
    parts = request.META.get("HTTP_AUTHORIZATION", "").split()
    if len(parts) != 2 or parts[0].lower() != "bearer" or not parts[1].isascii():
        return None
    token = live_token(hash_token(parts[1]))
    return for_token(token) if token is not None else None


class ProvisionerCheck:
    """The decorator-middleware django-scim2 puts around each SCIM view."""

    def __init__(self, get_response: Callable[..., HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        principal = bearer(request)
        if principal is None:
            return refusal(SCIMException("a live bearer token with the provisioner role is required", status=401))
        if not any(Role.PROVISIONER in roles for _, roles in principal.grants):
            return refusal(SCIMException("this token does not hold the provisioner role", status=403))
        request.scim_principal = principal  # type: ignore[attr-defined]
        return self.get_response(request, *args, **kwargs)
