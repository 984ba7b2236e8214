"""The ASGI process: the long-lived endpoints (waits and the event stream) as coroutines on one event loop
(docs/deploy.md, "Waits and the event stream"). It serves the whole project, so any route answers here (`make
run` serves everything from it), but in production the API's other requests are better served by gunicorn's
threads (docs/deploy.md, "Running in production"):

    .venv/bin/uvicorn suspensions_project.asgi:application --host 127.0.0.1 --port 8002 --lifespan off

The long-lived paths go through a handler of their own whose middleware is all async-capable: with one sync-only
middleware in the chain Django would run each request in a thread of its own, and each waiter would hold a thread
and a database connection for its whole wait. Theirs is the request id and access line, the security headers,
and the session and user for the console's staff; their views refuse with problem+json themselves (api/waits.py).
"""

import os
from typing import Any

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "suspensions_project.settings")
django_application = get_asgi_application()

from suspensions import listening  # noqa: E402  (after Django is set up)
from suspensions.api.waits import LONG_LIVED_PATH  # noqa: E402

LONG_LIVED_MIDDLEWARE = [
    "suspensions.observability.middleware.RequestObservabilityMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]


class LongLivedHandler(ASGIHandler):
    """Django's ASGI handler with LONG_LIVED_MIDDLEWARE instead of settings.MIDDLEWARE."""

    def load_middleware(self, is_async: bool = False) -> None:
        every = settings.MIDDLEWARE
        settings.MIDDLEWARE = LONG_LIVED_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = every


long_lived_application = LongLivedHandler()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Django's ASGI application, on a loop whose one LISTEN connection every wait shares."""
    if scope["type"] == "http":
        listening.serving_loop()
        if LONG_LIVED_PATH.match(scope["path"]):
            await long_lived_application(scope, receive, send)
            return
    await django_application(scope, receive, send)
