"""Role mappings over HTTP (docs/identity.md, "How roles map"): the operators' routes and the auditors' record."""

import pytest
from django.contrib.auth.models import User

from suspensions.models import RoleChange, RoleMapping
from suspensions.services.role_mappings import sync_roles
from tests.helpers import client, post, problem

MAPPINGS = "/api/v1/role-mappings"


@pytest.fixture
def operator(db, token):
    return client(token("acme", ["operator"], "ops"))


def mappings():
    return sorted(RoleMapping.objects.values_list("group", "scope", "role"))


def refused(send, status, code):
    before = (mappings(), RoleChange.objects.count())
    body = problem(send(), status, code)
    assert (mappings(), RoleChange.objects.count()) == before
    return body


def test_an_operator_maps_lists_reads_and_deletes(operator):
    created = post(operator, MAPPINGS, {"group": "payments", "scope": "acme/payments", "role": "approver"})
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["group"], body["scope"], body["role"], body["created_by"]) == (
        "payments",
        "acme/payments",
        "approver",
        "token:ops",
    )
    listed = operator.get(MAPPINGS).json()["results"]
    assert [m["id"] for m in listed] == [body["id"]]
    assert operator.get(f"{MAPPINGS}/{body['id']}").json() == body
    assert operator.delete(f"{MAPPINGS}/{body['id']}").json() == body
    assert mappings() == []


def test_the_scope_may_be_left_out_by_an_operator_of_one_scope(operator):
    created = post(operator, MAPPINGS, {"group": "ops", "role": "operator"})
    assert created.status_code == 201, created.content
    assert created.json()["scope"] == "acme"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"group": "g", "scope": "acme", "role": "engine"}, "role"),
        ({"group": "g", "scope": "acme", "role": "superuser"}, "role"),
        ({"group": "", "scope": "acme", "role": "approver"}, "group"),
        ({"group": "g" * 256, "scope": "acme", "role": "approver"}, "group"),
        ({"group": "g\u0007", "scope": "acme", "role": "approver"}, "group"),
        ({"group": "g", "scope": "Not A Scope", "role": "approver"}, "scope"),
        ({"group": "g", "scope": "acme", "role": "approver", "extra": 1}, "extra"),
        ({"group": 7, "scope": "acme", "role": "approver"}, "group"),
    ],
)
def test_a_bad_field_is_refused_and_nothing_written(operator, body, field):
    answer = refused(lambda: post(operator, MAPPINGS, body), 400, "invalid_request")
    assert field in answer["errors"]


def test_a_twin_mapping_is_refused(operator):
    post(operator, MAPPINGS, {"group": "g", "scope": "acme", "role": "approver"})
    answer = refused(
        lambda: post(operator, MAPPINGS, {"group": "g", "scope": "acme", "role": "approver"}), 400, "invalid_request"
    )
    assert "group" in answer["errors"]


def test_other_scopes_and_other_roles_are_refused(db, token, operator):
    refused(lambda: post(operator, MAPPINGS, {"group": "g", "scope": "globex", "role": "approver"}), 403, "forbidden")
    approver = client(token("acme", ["approver"], "appr"))
    refused(lambda: post(approver, MAPPINGS, {"group": "g", "scope": "acme", "role": "approver"}), 403, "forbidden")
    problem(approver.get(MAPPINGS), 403, "forbidden")
    other = post(client(token("globex", ["operator"], "gops")), MAPPINGS, {"group": "g", "role": "approver"}).json()
    refused(lambda: operator.delete(f"{MAPPINGS}/{other['id']}"), 404, "not_found")
    problem(operator.get(f"{MAPPINGS}/{other['id']}"), 404, "not_found")


def test_auditors_read_the_role_changes_of_their_scopes(db, token, operator):
    post(operator, MAPPINGS, {"group": "payments", "scope": "acme", "role": "approver"})
    RoleMapping.objects.create(
        group="payments",
        role="approver",
        created_by="x",
        created_at="2026-01-01T00:00Z",
        scope="globex",
        scope_l1="globex",
    )
    alice = User.objects.create_user("alice", is_staff=True)
    sync_roles(alice, ["payments"], cause="oidc sign-in https://id.example.com 42")
    auditor = client(token("acme", ["auditor"], "aud"))
    rows = auditor.get("/api/v1/role-changes").json()["results"]
    assert [(r["username"], r["scope"], r["role"], r["change"], r["cause"]) for r in rows] == [
        ("alice", "acme", "approver", "added", "oidc sign-in https://id.example.com 42")
    ]
    problem(client(token("acme", ["engine"], "eng")).get("/api/v1/role-changes"), 403, "forbidden")
