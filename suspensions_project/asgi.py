"""The ASGI process: the long-lived endpoints (waits and the event stream) as coroutines on one event loop
(docs/deploy.md, "Waits and the event stream"). It serves the whole project, so any route answers here, but the
API's other requests are better served by gunicorn's threads (docs/deploy.md, "Running in production"):

    .venv/bin/uvicorn suspensions_project.asgi:application --host 127.0.0.1 --port 8002
"""

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "suspensions_project.settings")
django_application = get_asgi_application()

from suspensions import listening  # noqa: E402  (after Django is set up)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Django's ASGI application, on a loop whose one LISTEN connection every wait shares."""
    if scope["type"] == "http":
        listening.serving_loop()
    await django_application(scope, receive, send)
