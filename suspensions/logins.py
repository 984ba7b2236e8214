"""Sign-in lockout (docs/decisions.md, "Trust boundaries"): at most 10 failed attempts per (username, client address) in
15 minutes.

After the tenth failure that pair is refused for 15 minutes, even with the
right password. Two doors, one rule: the authentication backend counts and
refuses for every form that calls authenticate() (the console's and the
admin's), and LoginLockoutMiddleware turns the refusal into a 429 page on
both. Counts live in Django's cache (CACHE_URL), shared by every web process:
the database's by default, Redis when configured. The cache's incr is a read
and a write, so concurrent failures may each count once where the store
loses a race: under a flood the lock may come a few attempts late, but it comes.
"""

import hashlib
import logging
import math
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm, UsernameField
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from .principals import has_staff_access

log = logging.getLogger(__name__)

MAX_FAILURES = 10
WINDOW_SECONDS = 15 * 60
LOCK_SECONDS = 15 * 60


def clock() -> float:
    # The lock's end is compared with this clock, not left to the cache's
    # expiry, so a test can move time instead of sleeping.
    return time.time()


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or the last entry of CLIENT_ADDRESS_HEADER when the proxy in front sets one.

    The header is trusted only when configured: a client can write any
    X-Forwarded-For it likes, but the last entry is the one our proxy appended.
    """
    header = settings.CLIENT_ADDRESS_HEADER
    forwarded = request.META.get(header, "") if header else ""
    return forwarded.rsplit(",", 1)[-1].strip() or request.META.get("REMOTE_ADDR") or "unknown"


def submitted_username(request: HttpRequest) -> str:
    """The sign-in form's username, cleaned as the form cleans it, so " alice" is counted as alice."""
    return UsernameField(max_length=254).to_python(request.POST.get("username", "")) or ""


def _key(kind: str, username: str, address: str) -> str:
    # Hashed: cache keys stay short and safe for any backend, and hold no username in clear.
    digest = hashlib.sha256(f"{username}\0{address}".encode()).hexdigest()
    return f"login-{kind}:{digest}"


def locked_for(username: str, address: str) -> int:
    """Seconds until (username, address) may try again; 0 when it may now."""
    until = cache.get(_key("lock", username, address))
    left = (until - clock()) if until is not None else 0
    return math.ceil(left) if left > 0 else 0


def record_failure(username: str, address: str) -> None:
    key = _key("failures", username, address)
    cache.add(key, 0, WINDOW_SECONDS)
    try:
        failures = cache.incr(key)
    except ValueError:  # the window ended between add and incr
        cache.set(key, 1, WINDOW_SECONDS)
        failures = 1
    if failures >= MAX_FAILURES:
        cache.set(_key("lock", username, address), clock() + LOCK_SECONDS, LOCK_SECONDS)
        cache.delete(key)
        log.warning(
            "sign-in locked for user %r from %s for %d s after %d failed attempts",
            username,
            address,
            LOCK_SECONDS,
            failures,
        )


def forget_failures(username: str, address: str) -> None:
    cache.delete(_key("failures", username, address))


def refused(username: str, address: str) -> int:
    """Seconds left on the lock of (username, address), logged when there are any; 0 when not locked."""
    left = locked_for(username, address)
    if left:
        log.warning("sign-in refused for user %r from %s: locked for %d more s", username, address, left)
    return left


class LockoutBackend(ModelBackend):
    """Django's ModelBackend that counts failures per (username, address) and refuses while locked."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> Any:
        name = username if username is not None else kwargs.get(get_user_model().USERNAME_FIELD)
        if request is None or name is None or password is None:
            # No address to count against (createsuperuser, the shell): Django's own rules alone.
            return super().authenticate(request, username, password, **kwargs)
        address = client_address(request)
        if refused(name, address):
            # authenticate() stops at PermissionDenied: no other backend is asked.
            raise PermissionDenied("sign-in locked")
        user = super().authenticate(request, username, password, **kwargs)
        if user is None:
            record_failure(name, address)
            return None
        forget_failures(name, address)
        if not settings.PASSWORD_SIGN_IN and not user.is_superuser:
            # PASSWORD_SIGN_IN=0 (docs/identity.md, "Passwords"): people sign in through the identity provider; the
            # right password of anyone but a superuser is answered like a wrong one, and not counted against them.
            log.info("password sign-in of %r refused: PASSWORD_SIGN_IN is off", name)
            return None
        return user


class StaffAuthenticationForm(AuthenticationForm):
    """The console's sign-in: a session only for an active staff user.

    Anyone else gets the same answer as a wrong password, so the form tells
    no one which accounts exist or which passwords are right.
    """

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if not has_staff_access(user):
            raise self.get_invalid_login_error()
