"""The console tests' signed-in approver."""

import pytest
from django.test import Client

from tests.helpers import member


@pytest.fixture
def alice(db):
    return member("alice", {"acme": ["approver"]}, is_staff=True)


@pytest.fixture
def as_alice(alice):
    c = Client()
    c.force_login(alice)
    return c
