"""SCIM group membership changes roles at once (docs/identity.md, "Groups"): through the operators' role mappings,
each change a RoleChange caused by the SCIM call, hand-granted roles untouched."""

import pytest
from django.contrib.auth import get_user_model

from suspensions.models import Membership, MembershipSource, RoleChange, RoleMapping
from suspensions.principals import for_user

from . import payloads

pytestmark = pytest.mark.django_db


def mapping(group, scope, role):
    row = RoleMapping(group=group, role=role, created_by="test", created_at="2026-01-01T00:00:00Z")
    row.stamp_scope(scope)
    row.save()


def given(username):
    user = get_user_model().objects.get(username=username)
    return set(Membership.objects.filter(user=user, source=MembershipSource.PROVIDER).values_list("scope", "role"))


def changes(username):
    rows = RoleChange.objects.filter(username=username).order_by("id")
    return [(r.scope, r.role, r.change, r.cause, r.by) for r in rows]


def person(provisioner, name):
    body = {**payloads.OKTA_CREATE_USER, "userName": name, "emails": [{"value": f"{name}@example.com"}]}
    return provisioner.call("post", "Users", body).json()["id"]


def may_approve(username, scope="acme/support"):
    return for_user(get_user_model().objects.get(username=username)).can("approver", scope)


def test_joining_a_mapped_group_gives_the_role_at_once_and_leaving_it_takes_it_away(provisioner):
    mapping("approvers", "acme", "approver")
    alice = person(provisioner, "alice")
    gid = provisioner.call("post", "Groups", {"displayName": "approvers"}).json()["id"]
    assert not may_approve("alice")

    provisioner.call("patch", f"Groups/{gid}", payloads.okta_members(add=[alice]))
    assert given("alice") == {("acme", "approver")}
    assert may_approve("alice")

    provisioner.call("patch", f"Groups/{gid}", payloads.okta_members(remove=[alice]))
    assert given("alice") == set()
    assert not may_approve("alice")
    by = "identity provider (SCIM)"
    cause = f"SCIM PATCH /scim/v2/Groups/{gid} by token:okta"
    assert changes("alice") == [("acme", "approver", "added", cause, by), ("acme", "approver", "removed", cause, by)]


def test_entra_adding_a_member_and_renaming_the_group_follow_the_mappings(provisioner):
    mapping("displayName", "acme", "approver")
    mapping("auditors", "acme", "auditor")
    alice = person(provisioner, "alice")
    gid = provisioner.call("post", "Groups", {**payloads.ENTRA_CREATE_GROUP, "members": [{"value": alice}]}).json()[
        "id"
    ]
    assert given("alice") == {("acme", "approver")}

    provisioner.call("patch", f"Groups/{gid}", payloads.okta_rename_group(gid, "auditors"))

    assert given("alice") == {("acme", "auditor")}


def test_deleting_the_group_or_the_person_removes_what_the_group_gave_and_keeps_hand_grants(provisioner):
    mapping("approvers", "acme", "approver")
    alice, bob = person(provisioner, "alice"), person(provisioner, "bob")
    hand = Membership(user=get_user_model().objects.get(username="bob"), role="operator")
    hand.stamp_scope("acme")
    hand.save()
    gid = provisioner.call(
        "post", "Groups", {"displayName": "approvers", "members": [{"value": alice}, {"value": bob}]}
    )
    assert given("alice") == given("bob") == {("acme", "approver")}

    provisioner.call("delete", f"Users/{bob}")
    assert given("bob") == set()
    assert Membership.objects.filter(user__username="bob", role="operator").exists()
    provisioner.call("delete", f"Groups/{gid.json()['id']}")
    assert given("alice") == set()


def test_a_refused_group_change_changes_no_role(provisioner):
    mapping("approvers", "acme", "approver")
    alice = person(provisioner, "alice")
    gid = provisioner.call("post", "Groups", {"displayName": "approvers"}).json()["id"]
    bad = payloads.okta_members(add=[alice, "ghost"])

    assert provisioner.call("patch", f"Groups/{gid}", bad).status_code == 400

    assert given("alice") == set()
    assert not RoleChange.objects.exists()
