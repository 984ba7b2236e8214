"""Concurrent SCIM calls on one resource queue on its row (services/provisioning.py): none is lost, none deadlocks.
Real threads, each on its own connection (tests/race.py)."""

import pytest

from suspensions.models import Membership, RoleMapping, ScimGroup
from suspensions.tokens import create_token
from tests.race import race

from . import payloads
from .conftest import Scim

pytestmark = pytest.mark.django_db(transaction=True)


def test_members_added_to_one_group_at_the_same_time_are_all_kept_with_their_roles():
    _, secret = create_token(scope="acme", roles=["provisioner"], name="okta")
    scim = Scim(secret)
    mapping = RoleMapping(group="approvers", role="approver", created_by="test", created_at="2026-01-01T00:00:00Z")
    mapping.stamp_scope("acme")
    mapping.save()
    people = [
        scim.call("post", "Users", {"userName": f"p{n}", "emails": [{"value": f"p{n}@example.com"}]}).json()["id"]
        for n in range(4)
    ]
    gid = scim.call("post", "Groups", {"displayName": "approvers"}).json()["id"]

    answers = race(
        4, [0], lambda n, _: Scim(secret).call("patch", f"Groups/{gid}", payloads.okta_members(add=[people[n]]))
    )

    assert [a.status_code for a in answers[0]] == [200] * 4
    group = ScimGroup.objects.get(scim_id=gid)
    assert sorted(group.members.values_list("username", flat=True)) == ["p0", "p1", "p2", "p3"]
    assert Membership.objects.filter(role="approver", scope="acme").count() == 4


def test_a_person_deleted_while_their_group_changes_ends_inactive_and_out_of_the_group():
    _, secret = create_token(scope="acme", roles=["provisioner"], name="okta")
    scim = Scim(secret)
    alice = scim.call("post", "Users", {"userName": "alice"}).json()["id"]
    bob = scim.call("post", "Users", {"userName": "bob"}).json()["id"]
    gid = scim.call("post", "Groups", {"displayName": "team", "members": [{"value": alice}]}).json()["id"]
    calls = [("delete", f"Users/{alice}", None), ("patch", f"Groups/{gid}", payloads.okta_members(add=[bob]))]

    answers = race(2, [0], lambda n, _: Scim(secret).call(*calls[n]))

    assert sorted(a.status_code for a in answers[0]) == [200, 204]
    group = ScimGroup.objects.get(scim_id=gid)
    assert list(group.members.values_list("username", flat=True)) == ["bob"]


def test_two_deletes_and_a_patch_of_one_person_at_once_answer_204_then_404_never_500():
    _, secret = create_token(scope="acme", roles=["provisioner"], name="okta")
    alice = Scim(secret).call("post", "Users", {"userName": "alice"}).json()["id"]
    calls = [("delete", f"Users/{alice}", None)] * 2 + [("patch", f"Users/{alice}", payloads.OKTA_DEACTIVATE)]

    answers = race(3, [0], lambda n, _: Scim(secret).call(*calls[n]))

    statuses = [a.status_code for a in answers[0]]
    assert sorted(statuses[:2]) == [204, 404]
    assert statuses[2] in (200, 404)
    assert Scim(secret).get(f"Users/{alice}").status_code == 404
