"""Approval floors in the console (issue 32 item 5, docs/policies.md "Floors"): operators only.

The pages call the API's services; a refused form is a 400 with the error next
to its field and nothing written; another tenant's floor is a 404.
"""

from html import unescape

import pytest
from django.test import Client

from suspensions.models import ApprovalFloor
from suspensions.principals import Principal
from suspensions.services import approval_floors
from tests.helpers import call, client, continuation, member, post, register

OPS = Principal(name="user:olga", grants=(("acme", frozenset({"operator"})),))


def browser(username, grants):
    c = Client()
    c.force_login(member(username, grants, is_staff=True))
    return c


@pytest.fixture
def olga(db):
    return browser("olga", {"acme": ["operator"], "acme/eu": ["operator"]})


def floors_now():
    return sorted(ApprovalFloor.objects.values_list("scope", "quorum", "exclude_requester", "on_expiry", "updated_at"))


def text(response, status=200):
    assert response.status_code == status, response.content[:500]
    return unescape(response.content.decode())


def floor(scope="acme", **values):
    return approval_floors.create_floor(principal=OPS, scope=scope, **values)


FORM = {"quorum": "2", "exclude_requester": "on", "on_expiry": ["expire", "deny"]}


def test_an_operator_sets_reads_changes_and_deletes_a_floor_through_the_pages(olga):
    assert 'href="/console/approval-floors/"' in text(olga.get("/console/"))
    assert "No floor yet" in text(olga.get("/console/approval-floors/"))
    assert 'name="scope"' in text(olga.get("/console/approval-floors/new"))
    created = olga.post("/console/approval-floors/new", {"scope": "acme/eu", **FORM})
    assert (created.status_code, created["Location"]) == (302, "/console/approval-floors/")
    row = ApprovalFloor.objects.get()
    assert (row.scope, row.quorum, row.exclude_requester, row.on_expiry) == ("acme/eu", 2, True, ["expire", "deny"])
    assert (row.created_by, row.require_linked_person) == ("user:olga", False)
    listed = text(olga.get("/console/approval-floors/"))
    assert "acme/eu" in listed and "2 approvers" in listed and "separation of duties" in listed
    edit = text(olga.get(f"/console/approval-floors/{row.id}/"))
    assert 'value="2" selected' in edit and "Delete this floor" in edit
    changed = olga.post(f"/console/approval-floors/{row.id}/", {**FORM, "quorum": "3", "require_linked_person": "on"})
    assert changed.status_code == 302
    row.refresh_from_db()
    assert (row.quorum, row.require_linked_person, row.updated_by) == (3, True, "user:olga")
    assert olga.post(f"/console/approval-floors/{row.id}/delete").status_code == 302
    assert ApprovalFloor.objects.count() == 0


@pytest.mark.parametrize(
    "change",
    [
        {"quorum": "9"},
        {"quorum": ""},
        {"on_expiry": []},
        {"on_expiry": ["later"]},
        {"scope": "globex"},
        {"scope": "acme"},  # has a floor already
    ],
)
def test_a_refused_form_is_400_with_the_error_by_its_field_and_writes_nothing(olga, change):
    floor(quorum=2)
    before = floors_now()
    body = {"scope": "acme/eu", **FORM, **change}
    page = text(olga.post("/console/approval-floors/new", {k: v for k, v in body.items() if v != []}), 400)
    assert 'class="notice notice-error small"' in page
    assert floors_now() == before


def test_a_floor_that_leaves_no_on_expiry_in_common_is_refused_on_the_page(olga):
    floor(on_expiry=["deny"])
    before = floors_now()
    page = text(olga.post("/console/approval-floors/new", {"scope": "acme/eu", **FORM, "on_expiry": ["expire"]}), 400)
    assert 'id="error-on_expiry"' in page and "acme" in page
    assert floors_now() == before


def test_a_staff_user_who_is_no_operator_gets_403_on_every_floor_page_and_writes_nothing(db):
    found = floor(quorum=2)
    before = floors_now()
    approver = browser("alice", {"acme": ["approver", "auditor"]})
    assert 'href="/console/approval-floors/"' not in text(approver.get("/console/"))
    for response in [
        approver.get("/console/approval-floors/"),
        approver.get("/console/approval-floors/new"),
        approver.post("/console/approval-floors/new", {"scope": "acme", **FORM}),
        approver.get(f"/console/approval-floors/{found.id}/"),
        approver.post(f"/console/approval-floors/{found.id}/", FORM),
        approver.post(f"/console/approval-floors/{found.id}/delete"),
    ]:
        assert response.status_code == 403 and b'id="not-operator"' in response.content
    assert floors_now() == before


def test_an_operator_of_another_tenant_sees_and_changes_nothing(db):
    found = floor(quorum=2)
    before = floors_now()
    gus = browser("gus", {"globex": ["operator"]})
    assert "acme" not in text(gus.get("/console/approval-floors/"))
    assert gus.get(f"/console/approval-floors/{found.id}/").status_code == 404
    assert gus.post(f"/console/approval-floors/{found.id}/", FORM).status_code == 404
    assert gus.post(f"/console/approval-floors/{found.id}/delete").status_code == 404
    assert floors_now() == before


def test_the_approval_page_names_the_floor_that_raised_the_pause(db, token, olga):
    floor(quorum=2, require_linked_person=True)
    engine = client(token("acme", ["engine"], "engine"))
    run = register(engine, "acme/eu")
    body = {"revision": 1, "reason": "approval", "pending": [call()], "continuation": continuation()}
    s = post(engine, f"/api/v1/runs/{run['id']}/suspend", body).json()
    page = text(browser("alice", {"acme": ["approver"]}).get(f"/console/approvals/{s['id']}/"))
    assert 'id="policy-floor"' in page and "Only people decide" in page
    assert "2 approvers" in page


# -- the admin -----------------------------------------------------------------------------------

ADMIN = "/admin/suspensions/approvalfloor/"
ADMIN_FORM = {"quorum": "2", "exclude_requester": "on", "on_expiry": ["deny"]}


@pytest.fixture
def root(db):
    c = Client()
    c.force_login(member("root", is_staff=True, is_superuser=True))
    return c


def test_a_superuser_sets_changes_and_deletes_a_floor_in_the_admin_through_the_service(root):
    added = root.post(f"{ADMIN}add/", {"scope": "acme", **ADMIN_FORM})
    assert added.status_code == 302, added.content[:800]
    row = ApprovalFloor.objects.get()
    assert (row.scope, row.quorum, row.on_expiry, row.created_by) == ("acme", 2, ["deny"], "user:root")
    changed = root.post(f"{ADMIN}{row.pk}/change/", {**ADMIN_FORM, "quorum": "4"})
    assert changed.status_code == 302, changed.content[:800]
    row.refresh_from_db()
    assert (row.scope, row.quorum, row.updated_by) == ("acme", 4, "user:root")
    assert root.post(f"{ADMIN}{row.pk}/delete/", {"post": "yes"}).status_code == 302
    assert ApprovalFloor.objects.count() == 0


@pytest.mark.parametrize(
    "body",
    [
        {"scope": "ACME", **ADMIN_FORM},
        {"scope": "acme", **ADMIN_FORM, "quorum": "0"},
        {"scope": "acme/eu", **ADMIN_FORM, "on_expiry": ["expire"]},  # nothing in common with acme's floor
        {"scope": "acme", **ADMIN_FORM},  # acme has a floor already
    ],
)
def test_a_refused_floor_in_the_admin_is_a_form_error_and_writes_nothing(root, body):
    floor(on_expiry=["deny"])
    before = floors_now()
    response = root.post(f"{ADMIN}add/", body)
    assert response.status_code == 200 and response.context["adminform"].form.errors
    assert floors_now() == before


def test_a_staff_operator_reads_the_floors_of_their_scope_in_the_admin_but_writes_nothing(db):
    found = floor(quorum=2)
    before = floors_now()
    ops = browser("olga", {"acme": ["operator"]})
    assert ops.get(ADMIN).status_code == 200
    assert ops.post(f"{ADMIN}add/", {"scope": "acme/eu", **ADMIN_FORM}).status_code == 403
    assert ops.post(f"{ADMIN}{found.pk}/change/", {**ADMIN_FORM, "quorum": "1"}).status_code == 403
    assert ops.post(f"{ADMIN}{found.pk}/delete/", {"post": "yes"}).status_code == 403
    assert floors_now() == before
