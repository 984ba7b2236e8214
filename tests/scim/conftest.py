"""Fixtures of the SCIM tests: a provisioner's client on the Django test client."""

import json

import pytest
from django.test import Client

from suspensions.tokens import create_token

SCIM = "application/scim+json"


class Scim:
    """A SCIM client: JSON bodies, the provisioner's bearer token, the answer's JSON at .json()."""

    def __init__(self, secret):
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    def call(self, method, path, body=None, raw=None):
        data = raw if raw is not None else (json.dumps(body) if body is not None else "")
        if method == "get":
            return self.client.get("/scim/v2/" + path)
        return getattr(self.client, method)("/scim/v2/" + path, data=data, content_type=SCIM)

    def get(self, path):
        return self.client.get("/scim/v2/" + path)


@pytest.fixture
def provisioner(db):
    _, secret = create_token(scope="acme", roles=["provisioner"], name="okta")
    return Scim(secret)
