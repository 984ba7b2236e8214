"""Per-token API throttling (docs/decisions.md, "Trust boundaries"): off unless API_THROTTLE_RATE is set, e.g.
"100/min"."""

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from ..tokens import LiveToken


class TokenRateThrottle(SimpleRateThrottle):
    """One bucket per API token (per user for the console's session), in the default cache.

    The rate is read from settings on every request rather than from DRF's
    THROTTLE_RATES, which DRF freezes into the class at import.
    """

    scope = "token"

    def get_rate(self) -> str | None:
        return getattr(settings, "API_THROTTLE_RATE", None) or None

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.auth, LiveToken):
            ident = f"token:{request.auth.pk}"
        elif request.user is not None and getattr(request.user, "pk", None) is not None:
            ident = f"user:{request.user.pk}"
        else:
            return None
        return self.cache_format % {"scope": self.scope, "ident": ident}
