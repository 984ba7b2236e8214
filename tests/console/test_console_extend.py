"""The console's Extend button (docs/console.md): an operator gives a pending approval more time, with a reason, through
the API's own service; nobody else sees the button, and a refusal is a message that changes nothing."""

import html
import re
from datetime import timedelta

import pytest
from django.test import Client

from suspensions.models import Approval, Event, Suspension
from tests.helpers import approval_pause, member, snapshot


@pytest.fixture
def as_operator(db):
    c = Client()
    c.force_login(member("olga", {"acme": ["approver", "operator"]}, is_staff=True))
    return c


def messages_in(page):
    return [html.unescape(m) for m in re.findall(r'class="message message-\w+">([^<]*)<', page)]


def test_an_operator_extends_a_pending_approval_by_the_chosen_time_with_a_reason(as_operator):
    record = approval_pause("acme", ttl=600)
    page = as_operator.get(f"/console/approvals/{record.pk}/").content.decode()
    assert 'id="extend-form"' in page
    answer = as_operator.post(f"/console/approvals/{record.pk}/extend", {"seconds": "3600", "reason": "out today"})
    assert answer.status_code == 302 and answer["Location"] == f"/console/approvals/{record.pk}/"
    assert Suspension.objects.get(pk=record.pk).expires_at == record.expires_at + timedelta(hours=1)
    extended = Event.objects.get(run_id=record.run_id, kind="deadline_extended")
    assert (extended.actor, extended.data["note"]) == ("user:olga", "out today")
    shown = as_operator.get(answer["Location"]).content.decode()
    assert any(m.startswith("Extended: the deadline is now") for m in messages_in(shown))


def test_an_approver_without_operator_sees_no_extend_button_and_its_post_changes_nothing(as_alice):
    record = approval_pause("acme", ttl=600)
    assert 'id="extend-form"' not in as_alice.get(f"/console/approvals/{record.pk}/").content.decode()
    before = snapshot()
    answer = as_alice.post(f"/console/approvals/{record.pk}/extend", {"seconds": "3600", "reason": "mine"}, follow=True)
    assert snapshot() == before
    assert "You do not hold the operator role in this approval's scope." in messages_in(answer.content.decode())


def test_an_extension_without_a_reason_or_of_a_decided_approval_changes_nothing(as_operator):
    record = approval_pause("acme", ttl=600)
    before = snapshot()
    answer = as_operator.post(f"/console/approvals/{record.pk}/extend", {"seconds": "3600", "reason": ""}, follow=True)
    assert "Say why it needs more time." in messages_in(answer.content.decode())
    odd = as_operator.post(f"/console/approvals/{record.pk}/extend", {"seconds": "7", "reason": "x"}, follow=True)
    assert odd.status_code == 200 and snapshot() == before
    Approval.objects.filter(pk=record.pk).update(status="cancelled")
    Suspension.objects.filter(pk=record.pk).delete()
    before = snapshot()
    gone = as_operator.post(f"/console/approvals/{record.pk}/extend", {"seconds": "3600", "reason": "x"}, follow=True)
    assert snapshot() == before
    assert any("cannot be extended" in m for m in messages_in(gone.content.decode()))
