"""SCIM Groups (docs/identity.md, "Provisioning (SCIM) and leavers"): created, renamed and given members as Okta and
Entra do it; members must be provisioned people; bad bodies write nothing."""

import pytest

from suspensions.models import ScimGroup

from . import payloads

pytestmark = pytest.mark.django_db
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


def groups():
    return sorted(
        (g.display_name, g.external_id, sorted(g.members.values_list("username", flat=True)))
        for g in ScimGroup.objects.all()
    )


def person(provisioner, name):
    body = {**payloads.OKTA_CREATE_USER, "userName": name, "emails": [{"value": f"{name}@example.com"}]}
    return provisioner.call("post", "Users", body).json()["id"]


def test_okta_creates_a_group_renames_it_and_moves_its_members(provisioner):
    alice, bob = person(provisioner, "alice"), person(provisioner, "bob")
    group = provisioner.call("post", "Groups", payloads.OKTA_CREATE_GROUP).json()

    provisioner.call("patch", f"Groups/{group['id']}", payloads.okta_members(add=[alice, bob]))
    assert groups() == [("Test SCIMv2", "", ["alice", "bob"])]
    provisioner.call("patch", f"Groups/{group['id']}", payloads.okta_members(remove=[alice]))
    renamed = provisioner.call("patch", f"Groups/{group['id']}", payloads.okta_rename_group(group["id"], "approvers"))

    assert renamed.status_code == 200
    assert groups() == [("approvers", "", ["bob"])]
    assert [m["value"] for m in renamed.json()["members"]] == [bob]
    shown = provisioner.get(f"Users/{bob}").json()
    assert [g["display"] for g in shown["groups"]] == ["approvers"]


def test_entra_creates_a_group_adds_and_removes_a_member_and_finds_it_by_name(provisioner):
    alice = person(provisioner, "alice")
    group = provisioner.call("post", "Groups", payloads.ENTRA_CREATE_GROUP)
    assert group.status_code == 201, group.content
    gid = group.json()["id"]

    provisioner.call("patch", f"Groups/{gid}", payloads.entra_add_member(alice))
    assert groups() == [("displayName", "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159", ["alice"])]
    provisioner.call("patch", f"Groups/{gid}", payloads.entra_remove_member(alice))
    found = provisioner.get('Groups?filter=displayName eq "displayName"').json()

    assert groups() == [("displayName", "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159", [])]
    assert [r["id"] for r in found["Resources"]] == [gid]


def test_put_replaces_the_members_and_delete_removes_the_group(provisioner):
    alice, bob = person(provisioner, "alice"), person(provisioner, "bob")
    gid = provisioner.call("post", "Groups", {**payloads.OKTA_CREATE_GROUP, "members": [{"value": alice}]}).json()["id"]

    replaced = provisioner.call("put", f"Groups/{gid}", {"displayName": "ops", "members": [{"value": bob}]})
    assert replaced.status_code == 200
    assert groups() == [("ops", "", ["bob"])]

    assert provisioner.call("delete", f"Groups/{gid}").status_code == 204
    assert groups() == []
    assert provisioner.get(f"Groups/{gid}").status_code == 404


def test_deleting_a_person_takes_them_out_of_their_groups(provisioner):
    alice = person(provisioner, "alice")
    provisioner.call("post", "Groups", {**payloads.OKTA_CREATE_GROUP, "members": [{"value": alice}]})

    provisioner.call("delete", f"Users/{alice}")

    assert groups() == [("Test SCIMv2", "", [])]


@pytest.mark.parametrize(
    "body, status, says",
    [
        ({"members": []}, 400, "displayName"),
        ({"displayName": ""}, 400, "displayName"),
        ({"displayName": 5}, 400, "displayName"),
        ({"displayName": "x", "members": [{"value": "nobody-by-this-id"}]}, 400, "nobody-by-this-id"),
        ({"displayName": "x", "members": {"value": "a"}}, 400, "members"),
        ({"displayName": "taken"}, 409, "taken"),
    ],
)
def test_a_group_body_that_cannot_be_applied_is_a_scim_error_and_writes_nothing(provisioner, body, status, says):
    provisioner.call("post", "Groups", {"displayName": "taken"})
    before = groups()

    response = provisioner.call("post", "Groups", body)

    assert response.status_code == status
    assert response.json()["schemas"] == [ERROR]
    assert says in response.json()["detail"]
    assert groups() == before


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "add", "path": "members", "value": [{"value": "ghost"}]}],
        [{"op": "add", "path": "members", "value": "alice"}],
        [{"op": "replace", "path": 'members[value eq "x"]', "value": []}],
        [{"op": "remove", "path": "displayName"}],
        [{"op": "replace", "path": "displayName", "value": "taken"}],
    ],
)
def test_a_group_patch_that_cannot_be_applied_changes_nothing(provisioner, operations):
    alice = person(provisioner, "alice")
    provisioner.call("post", "Groups", {"displayName": "taken"})
    gid = provisioner.call("post", "Groups", {"displayName": "mine", "members": [{"value": alice}]}).json()["id"]
    before = groups()

    response = provisioner.call("patch", f"Groups/{gid}", {"schemas": [payloads.PATCH_OP], "Operations": operations})

    assert response.status_code in (400, 409), response.content
    assert response.json()["schemas"] == [ERROR]
    assert groups() == before
