"""What /scim/v2/ tells a provider about itself: where it lives and what it supports (RFC 7643, section 5)."""

from typing import Any

from django.conf import settings
from django_scim.models import SCIMServiceProviderConfig

from .views import MAX_COUNT


def base_location(request: Any = None, *args: Any, **kwargs: Any) -> str:
    """The service's own address: the request's host, or CONSOLE_BASE_URL outside a request."""
    return str(request.build_absolute_uri("/")) if request is not None else settings.CONSOLE_BASE_URL + "/"


class ServiceProviderConfig(SCIMServiceProviderConfig):
    def to_dict(self) -> dict[str, Any]:
        config = super().to_dict()
        config.update(
            filter={"supported": True, "maxResults": MAX_COUNT},
            changePassword={"supported": False},
            documentationUri=None,
        )
        return config
