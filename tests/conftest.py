from collections.abc import Callable, Iterable, Iterator

import pytest
from django.conf import settings
from django.test import override_settings
from rest_framework.test import APIClient

from suspensions.tokens import create_token

from .helpers import client


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
