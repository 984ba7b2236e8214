import os
from collections.abc import Callable, Iterable, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.test import override_settings
from rest_framework.test import APIClient

from suspensions.tokens import create_token
from suspensions_project.celery import app as celery_app

from .helpers import client

REDIS_DATABASES = 16  # redis-server's default `databases`: numbers 0 to 15


def broker_of_worker(url: str, worker: str) -> str:
    """The Redis broker of xdist worker `gwN`: database (base - N), so parallel workers never share a queue.

    Each worker's Celery workers start with --purge and consume whatever is queued: on one broker
    they would purge, or run against the wrong test database, the tasks of another xdist worker.
    Counting down keeps the base for gw0 (and for a serial run), as TEST_ENV and each developer set it.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        return url
    base = int(parts.path.strip("/") or 0)
    number = base - int(worker.removeprefix("gw"))
    if not 0 <= number < REDIS_DATABASES:
        raise pytest.UsageError(f"xdist worker {worker} has no Redis database below {url}: raise its number")
    return urlunsplit(parts._replace(path=f"/{number}"))


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, this worker's own broker, for this process and every process it starts (child_env, gunicorn)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    url = broker_of_worker(settings.CELERY_BROKER_URL, worker)
    os.environ["CELERY_BROKER_URL"] = settings.CELERY_BROKER_URL = url
    celery_app.conf.broker_url = url


@pytest.fixture(autouse=True, scope="session")
def fast_password_hasher() -> Iterator[None]:
    """Users' passwords hashed with PBKDF2 at 1,000 iterations instead of Django's 1,000,000 (tests/hashers.py).

    Hundreds of tests create a user or sign one in; at about half a second a hash that was
    minutes of the suite, spent on a cost no test is about.
    """
    with override_settings(PASSWORD_HASHERS=["tests.hashers.FastPBKDF2PasswordHasher"]):
        yield


@pytest.fixture(autouse=True, scope="session")
def unhashed_static_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Templates render plain /static/ names in the suite, as with DEBUG on.

    With DEBUG off the settings pick WhiteNoise's manifest storage, which needs
    collectstatic's manifest to render a page, and the live server serves static
    files from their source folders, where hashed names do not exist. Overriding
    STORAGES here keeps that choice out of the settings (no switch an operator
    could turn off in production); test_production_static runs the manifest
    storage for real, behind gunicorn. An empty STATIC_ROOT keeps a stale
    collectstatic in var/ out of the suite (and WhiteNoise from warning it is missing).
    """
    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    static_root = tmp_path_factory.mktemp("static_root")
    with override_settings(STORAGES={**settings.STORAGES, "staticfiles": plain}, STATIC_ROOT=static_root):
        yield


@pytest.fixture(autouse=True)
def fan_out_wakeups_sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """After each test, the fan-out wake-ups it committed are sent (services/wakeups.py), before its patches go.

    A wake-up waits up to FAN_OUT_WINDOW_MS in this process: unsent, it would leave in a later test
    (a task that test did not make, through a send_task it may have patched). Taking `monkeypatch`
    makes this teardown run before monkeypatch's own.
    """
    yield
    from suspensions.services.outbox import WAKEUPS

    WAKEUPS.flush()


@pytest.fixture
def token() -> Callable[..., str]:
    """token(scope, roles) -> secret of a fresh API token."""

    def make(scope: str = "acme", roles: Iterable[str] = ("engine",), name: str = "") -> str:
        _, secret = create_token(scope=scope, roles=roles, name=name or f"{scope}-{'-'.join(roles)}")
        return secret

    return make


@pytest.fixture
def engine(db: None, token: Callable[..., str]) -> APIClient:
    return client(token("acme", ["engine"], "engine"))


@pytest.fixture
def chains_intact(db: None) -> Iterator[None]:
    """After the test, every run's audit chain, read from the events API, recomputes in Python
    (docs/auditors.md, "What is recorded").

    Modules whose tests drive transitions of every kind use it (pytestmark), so each door's events are held to it.
    """
    yield
    from .helpers import assert_chains_intact

    assert_chains_intact()


@pytest.fixture
def chains_intact_in_db(db: None) -> Iterator[None]:
    """After the test, every run's audit chain recomputes from its rows (`verify_audit`'s check, in one pass)."""
    yield
    from suspensions.services import audit

    assert audit.verify_all().problems == []
