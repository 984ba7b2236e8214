"""Approver emails (DESIGN §14): who gets them, what they say, the one reminder, and failures."""

import json
import logging
from datetime import timedelta

import pytest
from django.core.mail.backends.base import BaseEmailBackend
from django.test import override_settings

from suspensions import notify, services, tasks
from suspensions.clock import db_now
from suspensions.models import Approval, OutboxEvent
from tests.factories import principal
from tests.helpers import call, continuation, member

pytestmark = pytest.mark.django_db

LONG_NOTE = "x" * 5000


class FailingBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        raise ConnectionRefusedError("mail server down")


def request_approval(scope="acme/support", agent="refund-agent", ttl=3600, arguments='{"amount": 900}'):
    """A real T2 suspend for approval, as an engine sends it; returns the Approval record."""
    engine = principal("token:engine", scope, "engine")
    run = services.register_run(principal=engine, agent_id=agent, scope=scope)
    suspension = services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=run.revision,
        reason="approval",
        pending=[call("c1", "send_refund", arguments), call("c2", "notify_customer", '{"to": "ann"}')],
        continuation=continuation(),
        ttl_seconds=ttl,
    )
    return Approval.objects.get(pk=suspension.id)


def requested(approval):
    """The outbox row the fan-out would hand over: ids and tool names, no arguments."""
    data = {"suspension_id": str(approval.pk), "run_id": str(approval.run_id), "tools": ["send_refund"]}
    return OutboxEvent(type="approval.requested", run_id=approval.run_id, data=data, created_at=db_now())


def at_fraction_of_deadline(approval, fraction, span=timedelta(minutes=100)):
    """Move the approval in the database so that `fraction` of its time to deadline has passed."""
    now = db_now()
    created = now - span * fraction
    Approval.objects.filter(pk=approval.pk).update(created_at=created, expires_at=created + span)


def recipients(outbox):
    return sorted(address for message in outbox for address in message.to)


def test_approvers_of_a_covering_scope_get_the_mail_with_link_agent_tools_and_arguments(mailoutbox, settings):
    settings.CONSOLE_BASE_URL = "https://suspensions.example.com"
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    member("bob", {"acme/support": ["approver"]}, is_staff=True, email="bob@example.com")
    approval = request_approval(arguments=json.dumps({"amount": 900, "note": LONG_NOTE}))

    notify.on_outbox_event(requested(approval))

    assert recipients(mailoutbox) == ["alice@example.com", "bob@example.com"]
    message = mailoutbox[0]
    assert "refund-agent" in message.subject
    assert "send_refund, notify_customer" in message.subject
    assert f"https://suspensions.example.com/console/approvals/{approval.pk}/" in message.body
    assert '"amount": 900' in message.body
    assert '{"to": "ann"}' in message.body
    assert LONG_NOTE not in message.body
    assert "x" * (notify.ARGUMENT_CHARS - 30) + "…" in message.body


def test_the_mail_names_the_deadline_in_utc(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()

    notify.on_outbox_event(requested(approval))

    assert f"Deadline: {approval.expires_at:%Y-%m-%d %H:%M:%S} UTC" in mailoutbox[0].body


def test_an_approval_without_a_deadline_says_no_deadline(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval(ttl=0)

    notify.on_outbox_event(requested(approval))

    assert "Deadline: no deadline" in mailoutbox[0].body


def test_approvers_of_other_scopes_non_staff_users_inactive_users_and_auditors_get_nothing(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    member("sales", {"acme/sales": ["approver"]}, is_staff=True, email="sales@example.com")
    member("deep", {"acme/support/eu": ["approver"]}, is_staff=True, email="deep@example.com")
    member("plain", {"acme": ["approver"]}, email="plain@example.com")
    member("gone", {"acme": ["approver"]}, is_staff=True, is_active=False, email="gone@example.com")
    member("auditor", {"acme": ["auditor", "operator"]}, is_staff=True, email="auditor@example.com")
    member("other", {"globex": ["approver"]}, is_staff=True, email="other@example.com")
    approval = request_approval()

    notify.on_outbox_event(requested(approval))

    assert recipients(mailoutbox) == ["alice@example.com"]


def test_the_html_alternative_escapes_what_the_engine_sent(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval(agent="<b>agent</b>", arguments='{"html": "<script>alert(1)</script>"}')

    notify.on_outbox_event(requested(approval))

    html, mimetype = mailoutbox[0].alternatives[0]
    assert mimetype == "text/html"
    assert "&lt;script&gt;" in html
    assert "<script>" not in html
    assert "&lt;b&gt;agent&lt;/b&gt;" in html


def test_events_other_than_approval_requested_send_nothing(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    event = requested(approval)
    event.type = "approval.decided"

    notify.on_outbox_event(event)

    assert mailoutbox == []


def test_an_approval_decided_before_the_fan_out_sends_nothing(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    Approval.objects.filter(pk=approval.pk).update(status="denied")

    notify.on_outbox_event(requested(approval))

    assert mailoutbox == []


def test_the_reminder_goes_out_once_at_80_percent_and_never_twice(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    at_fraction_of_deadline(approval, 0.81)

    first = tasks.remind_approvers()
    second = tasks.remind_approvers()

    assert (first, second) == (1, 0)
    assert len(mailoutbox) == 1
    assert mailoutbox[0].subject.startswith("Reminder: ")
    assert f"/console/approvals/{approval.pk}/" in mailoutbox[0].body
    assert Approval.objects.get(pk=approval.pk).reminded_at is not None


def test_no_reminder_before_80_percent_of_the_time_to_deadline(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    at_fraction_of_deadline(approval, 0.7)

    assert tasks.remind_approvers() == 0
    assert mailoutbox == []
    assert Approval.objects.get(pk=approval.pk).reminded_at is None


def test_an_approval_without_a_deadline_or_past_it_gets_no_reminder(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    request_approval(ttl=0)
    overdue = request_approval()
    at_fraction_of_deadline(overdue, 1.2)

    assert tasks.remind_approvers() == 0
    assert mailoutbox == []


def test_a_pending_approval_already_decided_gets_no_reminder(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    version = services.Version(run_id=approval.run_id, suspension_id=approval.pk, run_revision=2)
    services.deny_approval(
        principal=principal("user:alice", "acme", "approver"),
        suspension_id=approval.pk,
        version=version,
        reason="no",
    )
    at_fraction_of_deadline(approval, 0.9)

    assert tasks.remind_approvers() == 0
    assert mailoutbox == []


@override_settings(EMAIL_BACKEND="tests.push.test_notify.FailingBackend")
def test_a_mail_backend_failure_is_logged_and_does_not_raise(caplog):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()

    with caplog.at_level(logging.ERROR, logger="suspensions.notify"):
        notify.on_outbox_event(requested(approval))

    assert any(str(approval.pk) in r.getMessage() and r.exc_info for r in caplog.records)


@override_settings(EMAIL_BACKEND="tests.push.test_notify.FailingBackend")
def test_a_reminder_whose_mail_fails_is_logged_and_not_retried(caplog):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    at_fraction_of_deadline(approval, 0.85)

    with caplog.at_level(logging.ERROR, logger="suspensions.notify"):
        first = tasks.remind_approvers()
    second = tasks.remind_approvers()

    assert (first, second) == (1, 0)
    assert any(str(approval.pk) in r.getMessage() for r in caplog.records)
