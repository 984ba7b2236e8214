"""services.role_mappings.sync_roles (docs/identity.md, "How roles map"): provider-given roles become exactly what the
mappings give for the groups, hand-granted roles stay, and every change is a RoleChange."""

import threading

import pytest
from django.contrib.auth.models import User
from django.db import connection

from suspensions.models import Membership, MembershipSource, RoleChange, RoleMapping
from suspensions.principals import for_user
from suspensions.services.role_mappings import sync_roles
from tests.factories import principal


def mapping(group, scope, role):
    row = RoleMapping(group=group, role=role, created_by="test", created_at="2026-01-01T00:00:00Z")
    row.stamp_scope(scope)
    row.save()
    return row


def grant(user, scope, role, source=MembershipSource.HAND):
    row = Membership(user=user, role=role, source=source)
    row.stamp_scope(scope)
    row.save()


def held(user, source=MembershipSource.PROVIDER):
    return set(Membership.objects.filter(user=user, source=source).values_list("scope", "role"))


def changes(user):
    return sorted(RoleChange.objects.filter(user_id=user.pk).values_list("scope", "role", "change", "cause"))


@pytest.fixture
def alice(db):
    return User.objects.create_user("alice", is_staff=True)


def test_groups_give_exactly_the_mapped_roles(alice):
    mapping("approvers", "acme/payments", "approver")
    mapping("approvers", "acme/refunds", "approver")
    mapping("auditors", "acme", "auditor")
    mapping("elsewhere", "globex", "operator")
    sync_roles(alice, ["approvers", "unknown"], cause="oidc sign-in 1")
    assert held(alice) == {("acme/payments", "approver"), ("acme/refunds", "approver")}
    assert for_user(alice).can("approver", "acme/payments/team")
    assert not for_user(alice).can("auditor", "acme")
    sync_roles(alice, ["auditors"], cause="oidc sign-in 2")
    assert held(alice) == {("acme", "auditor")}
    assert changes(alice) == [
        ("acme", "auditor", "added", "oidc sign-in 2"),
        ("acme/payments", "approver", "added", "oidc sign-in 1"),
        ("acme/payments", "approver", "removed", "oidc sign-in 2"),
        ("acme/refunds", "approver", "added", "oidc sign-in 1"),
        ("acme/refunds", "approver", "removed", "oidc sign-in 2"),
    ]


def test_hand_granted_roles_are_kept_apart(alice):
    mapping("ops", "acme", "operator")
    grant(alice, "acme", "operator")
    grant(alice, "acme", "approver")
    sync_roles(alice, ["ops"], cause="scim PATCH /Users/1")
    assert held(alice, MembershipSource.HAND) == {("acme", "operator"), ("acme", "approver")}
    assert held(alice) == {("acme", "operator")}
    sync_roles(alice, [], cause="scim PATCH /Users/1 active false")
    # The provider's operator role is gone; the same role granted by hand is not.
    assert held(alice) == set()
    assert held(alice, MembershipSource.HAND) == {("acme", "operator"), ("acme", "approver")}
    assert for_user(alice).can("operator", "acme")


def test_nothing_changes_nothing_is_written(alice):
    mapping("approvers", "acme", "approver")
    sync_roles(alice, ["approvers"], cause="first")
    sync_roles(alice, ["approvers", "approvers"], cause="second")
    assert [c[3] for c in changes(alice)] == ["first"]


def test_a_change_names_who_and_when(alice):
    mapping("approvers", "acme", "approver")
    sync_roles(alice, ["approvers"], cause="scim POST /Groups", by="scim:okta")
    change = RoleChange.objects.get()
    assert (change.user_id, change.username, change.by, change.scope_l1) == (alice.pk, "alice", "scim:okta", "acme")
    assert change.at is not None


def test_auditors_see_the_changes_of_their_scopes_only(alice):
    from suspensions import selectors

    mapping("approvers", "acme", "approver")
    mapping("approvers", "globex", "approver")
    sync_roles(alice, ["approvers"], cause="sign-in")
    seen = selectors.role_changes(principal("token:audit", "acme", "auditor"))
    assert [c.scope for c in seen] == ["acme"]
    assert not selectors.role_changes(principal("token:eng", "acme", "engine")).exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_syncs_of_one_person_leave_one_row_per_role():
    user = User.objects.create_user("bob", is_staff=True)
    mapping("approvers", "acme", "approver")
    mapping("auditors", "acme", "auditor")
    barrier = threading.Barrier(4)
    errors = []

    def sync(groups):
        try:
            barrier.wait()
            sync_roles(user, groups, cause=f"race {groups}")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sync, args=(g,)) for g in (["approvers"], ["approvers", "auditors"]) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    final = held(user)
    assert final in ({("acme", "approver")}, {("acme", "approver"), ("acme", "auditor")})
    # The record replays to the final state: each change follows from the one before it.
    replay: set[tuple[str, str]] = set()
    for scope, role, change in RoleChange.objects.order_by("at", "id").values_list("scope", "role", "change"):
        assert ((scope, role) in replay) == (change == "removed")
        (replay.discard if change == "removed" else replay.add)((scope, role))
    assert replay == final
