"""Delegates are told (docs/identity.md, "Delegation"): when their delegation starts, and, while it holds, of the
approvals that would ask the person they stand in for; the email names that person and carries no one-click link."""

from datetime import timedelta

import pytest
from django.core.mail.backends.base import BaseEmailBackend

from suspensions import tasks
from suspensions.clock import db_now
from suspensions.models import Delegation, Notification
from suspensions.principals import for_user
from suspensions.services import delegation_notices, delegations
from tests.helpers import approval_pause, call, member, notify_all

pytestmark = pytest.mark.django_db(transaction=True)


class FailingBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        raise ConnectionRefusedError("mail server down")


@pytest.fixture
def people(db):
    return {
        "alice": member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com"),
        "bob": member("bob", {}, is_staff=True, email="bob@example.com"),
        "carol": member("carol", {"acme": ["approver"]}, is_staff=True, email="carol@example.com"),
    }


def away(user, to="bob", scope="acme", starts_in=None, days=3):
    now = db_now()
    starts_at = now + starts_in if starts_in is not None else None
    return delegations.create_delegation(
        principal=for_user(user), to=to, scope=scope, starts_at=starts_at, ends_at=now + timedelta(days=days)
    )


def request(scope="acme/support"):
    return approval_pause(scope, calls=[call("c1", "send_refund", '{"amount": 900}')])


def test_the_delegate_is_told_when_a_delegation_starts_now(people, mailoutbox):
    made = away(people["alice"])
    assert tasks.announce_delegations([str(made.pk)]) == 1
    [message] = mailoutbox
    assert message.to == ["bob@example.com"]
    assert message.subject.startswith("You decide for alice in acme until")
    assert "/console/away/" in message.body
    assert tasks.announce_delegations([str(made.pk)]) == 0  # told once
    assert len(mailoutbox) == 1


def test_a_later_delegation_is_told_by_the_beat_once_it_starts(people, mailoutbox):
    made = away(people["alice"], starts_in=timedelta(hours=1))
    assert tasks.announce_delegations() == 0 and mailoutbox == []
    Delegation.objects.filter(pk=made.pk).update(starts_at=db_now() - timedelta(seconds=1))
    assert tasks.announce_delegations() == 1
    assert [m.to for m in mailoutbox] == [["bob@example.com"]]


def test_a_failed_notice_is_handed_back_for_the_next_beat(people, settings, mailoutbox):
    made = away(people["alice"])
    settings.EMAIL_BACKEND = "tests.push.test_delegation_notices.FailingBackend"
    assert delegation_notices.announce([made.pk]) == 0
    assert Delegation.objects.get(pk=made.pk).notified_at is None
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert delegation_notices.announce() == 1


def test_an_ended_delegation_is_not_announced(people, mailoutbox):
    made = away(people["alice"], starts_in=timedelta(hours=1))
    delegations.end_delegation(principal=for_user(people["alice"]), delegation_id=made.pk)
    Delegation.objects.filter(pk=made.pk).update(starts_at=db_now() - timedelta(seconds=1))
    assert delegation_notices.announce() == 0 and mailoutbox == []


def test_the_delegate_is_asked_for_the_delegators_approvals_without_one_click_links(people, mailoutbox, settings):
    settings.CONSOLE_BASE_URL = "https://suspensions.example.com"
    made = away(people["alice"])
    Delegation.objects.filter(pk=made.pk).update(notified_at=db_now())  # its own notice is another test's
    approval = request()
    notify_all()
    by_address = {m.to[0]: m for m in mailoutbox}
    assert sorted(by_address) == ["alice@example.com", "bob@example.com", "carol@example.com"]
    bobs = by_address["bob@example.com"]
    assert "in place of alice" in bobs.body
    assert f"https://suspensions.example.com/console/approvals/{approval.pk}/?acting_for=alice" in bobs.body
    assert "/console/act/" not in bobs.body  # no capability: the delegate decides in the console
    assert "/console/act/" in by_address["alice@example.com"].body
    row = Notification.objects.get(recipient="bob@example.com")
    assert (row.acting_for, row.user_id) == ("alice", None)


def test_no_delegate_is_asked_outside_the_delegated_scope_or_after_the_end(people, mailoutbox):
    made = away(people["alice"], scope="acme/billing")
    Delegation.objects.filter(pk=made.pk).update(notified_at=db_now())
    ended = away(people["carol"])
    delegations.end_delegation(principal=for_user(people["carol"]), delegation_id=ended.pk)
    request("acme/support")
    notify_all()
    assert sorted(m.to[0] for m in mailoutbox) == ["alice@example.com", "carol@example.com"]


def test_a_delegate_for_two_people_is_asked_once(people, mailoutbox):
    for giver in ("alice", "carol"):
        made = away(people[giver])
        Delegation.objects.filter(pk=made.pk).update(notified_at=db_now())
    request()
    notify_all()
    assert sorted(m.to[0] for m in mailoutbox) == ["alice@example.com", "bob@example.com", "carol@example.com"]
