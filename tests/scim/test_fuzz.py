"""Generated SCIM bodies (hypothesis): whatever a client sends to /scim/v2/, the answer is never a 5xx, and a refusal
is a SCIM error body that wrote nothing (docs/identity.md, "Errors")."""

import json

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suspensions.models import Membership, RoleChange, ScimGroup, ScimUser

from . import payloads

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
PATHS = [
    "active",
    "userName",
    "externalId",
    "name",
    "name.givenName",
    "emails",
    'emails[type eq "work"].value',
    "emails[primary eq true]",
    "members",
    'members[value eq "nobody"]',
    "displayName",
    "urn:ietf:params:scim:schemas:core:2.0:User:active",
    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
    "members[",
    "a.b.c",
]
operation = st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "remove", "replace", "Replace", "move"]) | values},
    optional={"path": st.sampled_from(PATHS) | values, "value": values | st.sampled_from([False, "False", "x@y.co"])},
)
patch = st.fixed_dictionaries(
    {"Operations": st.lists(operation, max_size=3) | values}, optional={"schemas": st.just([payloads.PATCH_OP])}
)
user = st.fixed_dictionaries(
    {},
    optional={
        "userName": st.sampled_from(["carol", "dave@example.com"]) | values,
        "active": values | st.sampled_from(["True", "false"]),
        "emails": values | st.lists(st.fixed_dictionaries({"value": st.just("c@example.com") | values}), max_size=2),
        "name": values | st.fixed_dictionaries({}, optional={"givenName": values, "familyName": values}),
        "externalId": values,
    },
)
group = st.fixed_dictionaries(
    {}, optional={"displayName": st.sampled_from(["team"]) | values, "members": values, "externalId": values}
)


def everything():
    users = get_user_model().objects.order_by("pk")
    return (
        list(users.values_list("username", "email", "first_name", "last_name", "is_active")),
        sorted(ScimUser.objects.values_list("scim_id", "external_id", "user_id")),
        sorted(
            (g.display_name, g.external_id, sorted(g.members.values_list("pk", flat=True)))
            for g in ScimGroup.objects.all()
        ),
        Membership.objects.count(),
        RoleChange.objects.count(),
    )


def check(response, before):
    assert response.status_code < 500, response.content
    if response.status_code >= 400:
        assert response.json()["schemas"] == [ERROR]
        assert everything() == before


@pytest.fixture
def alice(provisioner):
    return provisioner.call("post", "Users", {**payloads.OKTA_CREATE_USER, "userName": "alice"}).json()["id"]


def test_generated_user_creates_never_fail_the_server(provisioner):
    @FUZZ
    @given(body=user | values)
    def run(body):
        before = everything()
        check(provisioner.call("post", "Users", raw=json.dumps(body)), before)

    run()


def test_generated_user_patches_never_fail_the_server(provisioner, alice):
    @FUZZ
    @given(body=patch)
    def run(body):
        before = everything()
        check(provisioner.call("patch", f"Users/{alice}", raw=json.dumps(body)), before)

    run()


def test_generated_group_bodies_never_fail_the_server(provisioner, alice):
    gid = provisioner.call("post", "Groups", {"displayName": "fuzzed", "members": [{"value": alice}]}).json()["id"]

    @FUZZ
    @given(created=group | values, body=patch)
    def run(created, body):
        before = everything()
        check(provisioner.call("post", "Groups", raw=json.dumps(created)), before)
        before = everything()
        check(provisioner.call("patch", f"Groups/{gid}", raw=json.dumps(body)), before)

    run()
