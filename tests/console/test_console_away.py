"""The Away page and deciding for someone in the console (docs/console.md, "Delegation"), through Django's test
client: the forms call the API's own services, a refused form writes nothing, and a decision for someone names both."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from suspensions.models import Approval, ApprovalVote, Delegation
from tests.console.test_console import page
from tests.helpers import approval_pause, member, snapshot

pytestmark = pytest.mark.django_db


def signed_in(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def alice():
    return member("alice", {"acme": ["approver"]}, is_staff=True)


@pytest.fixture
def bob():
    return member("bob", {}, is_staff=True)


def away_form(**fields):
    ends = (timezone.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    return {"to": "bob", "scope": "acme", "ends_at": ends, "reason": "On leave", **fields}


def delegated(alice, bob, scope="acme"):
    now = timezone.now()
    row = Delegation(
        from_user=alice,
        to_user=bob,
        starts_at=now - timedelta(minutes=1),
        ends_at=now + timedelta(days=1),
        created_by="user:alice",
        created_at=now,
    )
    row.stamp_scope(scope)
    row.save()
    return row


def decide(c, record, **fields):
    body = {
        "run_id": str(record.run_id),
        "suspension_id": str(record.pk),
        "run_revision": "2",
        "decision": "approve",
        "reason": "",
        **fields,
    }
    return c.post(f"/console/approvals/{record.pk}/decide", body, follow=True)


def test_a_person_names_a_delegate_and_ends_it(alice, bob):
    c = signed_in(alice)
    response = c.post("/console/away/", away_form(), follow=True)
    assert response.status_code == 200
    made = Delegation.objects.get()
    assert (made.from_user, made.to_user, made.scope, made.reason) == (alice, bob, "acme", "On leave")
    assert "bob decides for you in acme" in response.content.decode()
    assert 'bob</span> decides for <span class="strong">alice' in page(signed_in(bob), "/console/away/")
    c.post(f"/console/away/{made.pk}/end", follow=True)
    assert Delegation.objects.get().ended_by == "user:alice"


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"to": "alice"}, "Name another person."),
        ({"to": "nobody"}, "No active staff user"),
        ({"scope": "globex"}, "Select a valid choice"),
        ({"from_": "carol"}, "the &#x27;operator&#x27; role is required"),
        ({"ends_at": "2020-01-01T00:00"}, "Must be in the future."),
    ],
)
def test_a_refused_delegation_writes_nothing_and_says_why(alice, bob, fields, problem):
    member("carol", {"acme": ["approver"]}, is_staff=True)
    before = snapshot()
    response = signed_in(alice).post("/console/away/", away_form(**fields))
    assert response.status_code == 400
    assert problem in response.content.decode()
    assert snapshot() == before


def test_another_person_cannot_end_a_delegation_they_are_not_named_in(alice, bob):
    made = delegated(alice, bob)
    carol = member("carol", {"acme": ["approver"]}, is_staff=True)
    signed_in(carol).post(f"/console/away/{made.pk}/end", follow=True)
    assert Delegation.objects.get().ended_at is None


def test_the_delegate_sees_what_waits_and_decides_for_the_delegator(alice, bob):
    delegated(alice, bob)
    record = approval_pause("acme/support", quorum=2)
    c = signed_in(bob)
    away = page(c, "/console/away/")
    assert f"/console/approvals/{record.pk}/?acting_for=alice" in away
    shown = page(c, f"/console/approvals/{record.pk}/?acting_for=alice")
    assert 'id="acting-notice"' in shown and 'name="acting_for" value="alice"' in shown
    response = decide(c, record, acting_for="alice")
    assert "vote is recorded: 1 of 2" in response.content.decode()
    [vote] = ApprovalVote.objects.filter(suspension_id=record.pk)
    assert (vote.voter, vote.acting_for) == ("user:bob", "user:alice")
    again = page(c, f"/console/approvals/{record.pk}/?acting_for=alice")
    assert 'for <span class="mono strong acting-for">user:alice</span>' in again


def test_a_decision_for_someone_whose_delegation_ended_decides_nothing(alice, bob):
    made = delegated(alice, bob)
    record = approval_pause("acme/support")
    Delegation.objects.filter(pk=made.pk).update(ended_at=timezone.now(), ended_by="user:alice")
    before = snapshot()
    response = decide(signed_in(bob), record, acting_for="alice")
    assert "no active delegation from &#x27;alice&#x27;" in response.content.decode()
    assert snapshot() == before
    assert Approval.objects.get(pk=record.pk).status == "pending"


def test_an_approver_who_stands_in_for_someone_may_choose_to_decide_as_themselves(alice):
    carol = member("carol", {"acme": ["approver"]}, is_staff=True)
    delegated(alice, carol)
    record = approval_pause("acme/support")
    shown = page(signed_in(carol), f"/console/approvals/{record.pk}/")
    assert 'id="acting-for"' in shown and ">as myself</option>" in shown
    assert 'id="acting-notice"' not in shown  # she can decide herself: nothing is chosen for her
    decide(signed_in(carol), record)
    assert Approval.objects.get(pk=record.pk).acting_for == ""
