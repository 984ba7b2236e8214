from collections.abc import Callable, Iterable

import pytest
from rest_framework.test import APIClient

from suspensions.tokens import create_token

from .helpers import client


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
