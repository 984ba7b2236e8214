"""A live server for the client's tests: gunicorn on a free port, serving the test database.

One gunicorn for the session (started once the test database exists); each
test takes `transactional_db`, so what it writes is committed where gunicorn
sees it and flushed after it. The app is the project's behind tests/client/apps.py's
kill-once hook, which does nothing unless a request asks for it.
"""

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from suspensions_client import Client

from tests.helpers import continuation
from tests.processes import database_url
from tests.push.conftest import receiver, worker  # noqa: F401 - fixtures of the webhook tests

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

from common import Gunicorn  # noqa: E402

APP = "tests.client.apps:kill_once_app"


@pytest.fixture(scope="session")
def gunicorn(django_db_setup: Any) -> Iterator[Gunicorn]:
    env = {"CELERY_BROKER_URL": settings.CELERY_BROKER_URL, "WEBHOOK_ALLOW_PRIVATE": "1"}
    with Gunicorn(database_url(), workers=2, threads=4, app=APP, env=env, quiet=True) as server:
        yield server


@pytest.fixture
def base_url(transactional_db: None, gunicorn: Gunicorn) -> str:
    return f"http://127.0.0.1:{gunicorn.port}"


@pytest.fixture
def connect(base_url: str, token: Callable[..., str]) -> Iterator[Callable[..., Client]]:
    """connect(*roles, scope="acme", **options) -> a Client with a fresh token of those roles; closed after."""
    opened: list[Client] = []

    def make(*roles: str, scope: str = "acme", name: str = "", **options: Any) -> Client:
        secret = token(scope, roles, name or f"{scope}-{'-'.join(roles)}-{len(opened)}")
        client = Client(base_url, secret, **options)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


@pytest.fixture
def engine(connect: Callable[..., Client]) -> Client:
    return connect("engine")


@pytest.fixture
def approver(connect: Callable[..., Client]) -> Client:
    return connect("approver")


def pending(call_id: str = "c1", name: str = "refund", arguments: str = '{"amount": 900}') -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def cont(**overrides: Any) -> dict[str, Any]:
    return continuation(**overrides)
