"""Capability URLs never reach a log line (docs/deploy.md, "Logs"; issue 50, item 1).

Three routes take their capability in the path: an approver email's one-click
link (`/console/act/<token>`, console:act), a pause's callback URL
(`/api/v1/callbacks/<token>`, callback) and an approval's sealed link
(`/console/open/<token>`, console:open_link). Whoever reads the path can decide
the approval, resume the run, or (signed in as an approver) open the page, so every
log line shows such a path as `/console/act/<redacted>` and so on: the access line
(middleware), and every other record's final text (logs.JsonFormatter,
logs.TextFormatter): Django's "Not Found: <path>" and CSRF warnings, a
traceback, Celery's lines, gunicorn's error log (gunicorn.conf.py). nginx's
access line does the same with a `map` (deploy/nginx/suspensions.conf).

The prefixes come from the URL patterns themselves (CAPABILITY_ROUTES,
reversed), so a moved route stays redacted; their percent-encoded spelling
(a `next=` query) is matched too.
"""

import re
from functools import cache

from django.core.exceptions import AppRegistryNotReady, ImproperlyConfigured
from django.urls import NoReverseMatch, reverse

# The URL names whose one path argument is a capability.
CAPABILITY_ROUTES = ("console:act", "callback", "console:open_link")
REDACTED = "<redacted>"
_PLACEHOLDER = "capability"
# A token's characters end at whitespace, a quote, a query or fragment, a JSON escape or a parameter.
_TOKEN = r"[^\s\"'?#&\\]+"


@cache
def prefixes() -> tuple[str, ...]:
    """Each capability route's path up to its token: ('/console/act/', '/api/v1/callbacks/', '/console/open/')."""
    return tuple(reverse(name, args=[_PLACEHOLDER]).removesuffix(_PLACEHOLDER) for name in CAPABILITY_ROUTES)


@cache
def _marks() -> tuple[str, ...]:
    """What every match holds: each prefix's last segment and the separator after it, plain or percent-encoded."""
    lasts = {prefix.rstrip("/").rsplit("/", 1)[-1] for prefix in prefixes()}
    return tuple(sorted(f"{last}{separator}" for last in lasts for separator in ("/", "%2")))


@cache
def _pattern() -> re.Pattern[str]:
    spellings = [re.escape(p) for p in prefixes()]
    spellings += [re.escape(p).replace("/", "%2[Ff]") for p in prefixes()]
    return re.compile(f"({'|'.join(spellings)}){_TOKEN}")


def _ready_pattern() -> re.Pattern[str] | None:
    try:
        return _pattern()
    except (AppRegistryNotReady, ImproperlyConfigured, NoReverseMatch, ImportError):
        # Before Django is set up (gunicorn's master, a settings error): no URL is served yet.
        return None


def path(value: str) -> str:
    """A request path as a log line may show it."""
    for prefix in prefixes():
        if value.startswith(prefix) and len(value) > len(prefix):
            return prefix + REDACTED
    return value


def text(value: str) -> str:
    """Any text (a formatted log line) with every capability path in it redacted.

    Every log line passes here: a line without any prefix's last segment (`act/`, `callbacks%2F`, ...), nearly
    all of them, is returned after a few substring tests, without running the pattern over it.
    """
    pattern = _ready_pattern()
    if pattern is None or not any(mark in value for mark in _marks()):
        return value
    return pattern.sub(rf"\1{REDACTED}", value)
