"""Approver emails (docs/notifications.md, "Email"): who gets them, what they say, the one reminder, and failures.

The emails are notifications (services.notifications): written by the fan-out
or the reminder's claim, delivered by `deliver`, retried, never swallowed.
"""

import json
import re
from datetime import timedelta

import pytest
from django.core.mail.backends.base import BaseEmailBackend
from django.test import override_settings

from suspensions import email_links, notify, services, tasks
from suspensions.clock import db_now
from suspensions.models import Approval, Notification, NotificationRoute, OutboxEvent
from suspensions.services import notifications, outbox
from tests.factories import principal
from tests.helpers import approval_pause, call, grant_channel, member, notify_all

pytestmark = pytest.mark.django_db(transaction=True)

LONG_NOTE = "x" * 5000


class FailingBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        raise ConnectionRefusedError("mail server down")


def request_approval(scope="acme/support", agent="refund-agent", ttl=3600, arguments='{"amount": 900}'):
    """A real T2 suspend for approval of two calls, as an engine sends it; returns the Approval record."""
    calls = [call("c1", "send_refund", arguments), call("c2", "notify_customer", '{"to": "ann"}')]
    return approval_pause(scope, ttl=ttl, agent=agent, calls=calls)


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

    notify_all()

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

    notify_all()

    assert f"Deadline: {approval.expires_at:%Y-%m-%d %H:%M:%S} UTC" in mailoutbox[0].body


def test_an_approval_without_a_deadline_says_no_deadline(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    request_approval(ttl=0)

    notify_all()

    assert "Deadline: no deadline" in mailoutbox[0].body


def test_approvers_of_other_scopes_non_staff_users_inactive_users_and_auditors_get_nothing(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    member("sales", {"acme/sales": ["approver"]}, is_staff=True, email="sales@example.com")
    member("deep", {"acme/support/eu": ["approver"]}, is_staff=True, email="deep@example.com")
    member("plain", {"acme": ["approver"]}, email="plain@example.com")
    member("gone", {"acme": ["approver"]}, is_staff=True, is_active=False, email="gone@example.com")
    member("auditor", {"acme": ["auditor", "operator"]}, is_staff=True, email="auditor@example.com")
    member("other", {"globex": ["approver"]}, is_staff=True, email="other@example.com")
    request_approval()

    notify_all()

    assert recipients(mailoutbox) == ["alice@example.com"]


def test_the_html_alternative_escapes_what_the_engine_sent(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    request_approval(agent="<b>agent</b>", arguments='{"html": "<script>alert(1)</script>"}')

    notify_all()

    html, mimetype = mailoutbox[0].alternatives[0]
    assert mimetype == "text/html"
    assert "&lt;script&gt;" in html
    assert "<script>" not in html
    assert "&lt;b&gt;agent&lt;/b&gt;" in html


def test_events_other_than_approval_requested_send_nothing(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    outbox.fan_out()
    mailoutbox.clear()
    Notification.objects.all().delete()
    services.cancel_run(
        principal=principal("token:engine", "acme/support", "engine"), run_id=approval.run_id, revision=2
    )

    notify_all()

    assert mailoutbox == []
    assert not Notification.objects.exists()


def test_an_approval_decided_before_the_fan_out_sends_nothing(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    Approval.objects.filter(pk=approval.pk).update(status="denied")

    notify_all()

    assert mailoutbox == []


def test_the_reminder_goes_out_once_at_80_percent_and_never_twice(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    at_fraction_of_deadline(approval, 0.81)

    first = tasks.remind_approvers()
    second = tasks.remind_approvers()
    notifications.deliver()

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
    assert notifications.deliver() == []
    assert mailoutbox == []
    assert Approval.objects.get(pk=approval.pk).reminded_at is None


def test_an_approval_without_a_deadline_or_past_it_gets_no_reminder(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    request_approval(ttl=0)
    overdue = request_approval()
    at_fraction_of_deadline(overdue, 1.2)

    assert tasks.remind_approvers() == 0
    assert notifications.deliver() == []
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
    assert notifications.deliver() == []
    assert mailoutbox == []


@override_settings(EMAIL_BACKEND="tests.push.test_notify.FailingBackend", WEBHOOK_RETRY_SCHEDULE=[30, 60])
def test_a_mail_backend_failure_is_a_failed_attempt_retried_then_failed_and_kept():
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    request_approval()
    outbox.fan_out()

    assert notifications.deliver() == ["retry"]
    n = Notification.objects.get()
    assert (n.status, n.attempts) == ("pending", 1)
    assert "mail server down" in n.last_error
    assert timedelta(seconds=23) < n.next_attempt_at - db_now() < timedelta(seconds=37)
    assert notifications.deliver() == []  # not due yet

    for expected in ("retry", "failed"):
        Notification.objects.update(next_attempt_at=db_now())
        assert notifications.deliver() == [expected]
    n.refresh_from_db()
    assert (n.status, n.attempts, n.delivered_at) == ("failed", 3, None)


def test_a_failed_attempt_then_a_delivered_one(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    request_approval()
    outbox.fan_out()
    with override_settings(EMAIL_BACKEND="tests.push.test_notify.FailingBackend"):
        assert notifications.deliver() == ["retry"]
    Notification.objects.update(next_attempt_at=db_now())

    assert notifications.deliver() == ["delivered"]

    n = Notification.objects.get()
    assert (n.status, n.attempts, n.last_error) == ("delivered", 2, "")
    assert [m.to for m in mailoutbox] == [["alice@example.com"]]
    assert mailoutbox[0].extra_headers[notify.NOTIFICATION_HEADER] == str(n.pk)


def test_a_leased_notification_is_not_claimed_twice_until_its_lease_is_over(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    request_approval()
    outbox.fan_out()

    claimed = notifications.claim()
    assert len(claimed) == 1
    assert notifications.claim() == []  # a worker that died mid-send holds it until the lease is over
    Notification.objects.update(leased_until=db_now() - timedelta(seconds=1))
    assert [n.pk for n in notifications.claim()] == [claimed[0].pk]


def test_a_second_fan_out_of_the_same_event_writes_no_second_notification(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()
    outbox.fan_out()
    event = OutboxEvent.objects.get(type="approval.requested")
    OutboxEvent.objects.filter(pk=event.pk).update(dispatched_at=None)

    outbox.fan_out()
    notify_all()

    assert Notification.objects.filter(approval_id=approval.pk).count() == 1
    assert len(mailoutbox) == 1


# -- nobody is asked who may not answer, one notification per person (docs/notifications.md) -----------------


def test_the_excluded_requester_gets_no_request_nor_reminder(mailoutbox):
    ada = member("ada", {"acme": ["approver", "engine"]}, is_staff=True, email="ada@example.com")
    member("bob", {"acme": ["approver"]}, is_staff=True, email="bob@example.com")
    approval = approval_pause(by=ada, exclude_requester=True)
    assert approval.requester_user_id == ada.pk

    notify_all()
    at_fraction_of_deadline(approval, 0.9)
    tasks.remind_approvers()
    notify_all()

    assert [(m.to, m.subject.startswith("Reminder")) for m in mailoutbox] == [
        (["bob@example.com"], False),
        (["bob@example.com"], True),
    ]
    assert not Notification.objects.filter(user=ada).exists()


def test_without_exclude_requester_the_requester_is_asked_too(mailoutbox):
    ada = member("ada", {"acme": ["approver", "engine"]}, is_staff=True, email="ada@example.com")
    approval_pause(by=ada, exclude_requester=False)

    notify_all()

    assert recipients(mailoutbox) == ["ada@example.com"]


def test_an_email_route_adds_an_address_and_an_approver_who_is_also_routed_gets_one_email(mailoutbox):
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    route("acme", "email", "oncall@example.com")
    route("acme", "email", "alice@example.com")
    route("acme/sales", "email", "sales@example.com")  # another scope's route
    route("acme", "email", "decided-only@example.com", event_types=["approval.decided"])
    route("acme", "email", "off@example.com", active=False)
    request_approval()

    notify_all()

    assert recipients(mailoutbox) == ["alice@example.com", "oncall@example.com"]
    by_address = {m.to[0]: m.body for m in mailoutbox}
    assert "/console/act/" in by_address["alice@example.com"]  # an approver's own: one-click links
    assert "/console/act/" not in by_address["oncall@example.com"]  # a route's: nobody's capability


def test_a_route_to_the_excluded_requesters_address_is_not_used_for_that_approval(mailoutbox):
    ada = member("ada", {"acme": ["engine"]}, is_staff=True, email="Ada@example.com")
    route("acme", "email", "ada@example.com")
    route("acme", "email", "oncall@example.com")
    approval_pause(by=ada, exclude_requester=True)

    notify_all()

    assert recipients(mailoutbox) == ["oncall@example.com"]


def test_slack_routes_get_a_request_only_when_slack_is_configured_and_decided_updates_follow(settings):
    grant_channel("C0123ABC", "acme")
    route("acme", "slack", "C0123ABC")
    approval = request_approval()
    outbox.fan_out()
    assert not Notification.objects.filter(channel="slack").exists()

    settings.SLACK_BOT_TOKEN = "xoxb-test"
    second_without_secret = request_approval()
    outbox.fan_out()
    assert not Notification.objects.filter(channel="slack").exists()

    settings.SLACK_SIGNING_SECRET = "signing-secret"
    second = request_approval()
    outbox.fan_out()
    services.deny_approval(
        principal=principal("user:alice", "acme", "approver"),
        suspension_id=second.pk,
        version=services.Version(run_id=second.run_id, suspension_id=second.pk, run_revision=2),
        reason="no",
    )
    outbox.fan_out()

    slack = Notification.objects.filter(channel="slack").order_by("created_at")
    assert [(n.approval_id, n.kind, n.recipient) for n in slack] == [
        (second.pk, "request", "C0123ABC"),
        (second.pk, "decided", "C0123ABC"),
    ]
    assert not {approval.pk, second_without_secret.pk} & {n.approval_id for n in slack}


def test_the_approvers_email_carries_approve_and_deny_links_for_that_approver(mailoutbox, settings):
    settings.CONSOLE_BASE_URL = "https://suspensions.example.com"
    alice = member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval()

    notify_all()

    found = re.findall(
        r"^(Approve|Deny): https://suspensions\.example\.com/console/act/(\S+)$", mailoutbox[0].body, re.M
    )
    assert [kind for kind, _ in found] == ["Approve", "Deny"]
    caps = [email_links.read(token) for _, token in found]
    assert [(c.user_id, c.approval_id, c.decision, c.revision) for c in caps] == [
        (alice.pk, approval.pk, "approve", 2),
        (alice.pk, approval.pk, "deny", 2),
    ]
    assert caps[0].expires_at == approval.expires_at.replace(microsecond=0)
    html, _ = mailoutbox[0].alternatives[0]
    assert html.count("/console/act/") == 2


def route(scope, kind, target, **fields):
    made = NotificationRoute(kind=kind, target=target, created_at=db_now(), **fields)
    made.stamp_scope(scope)
    made.save(force_insert=True)
    return made


def test_the_readmes_grep_finds_the_approve_link_in_the_file_backends_mail(settings, tmp_path):
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)
    alice = member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval(arguments=json.dumps({"note": "é" * 400}))  # non-ASCII, long: still one line

    notify_all()

    text = "".join(p.read_text() for p in tmp_path.glob("*.log"))
    (line,) = re.findall(r"^Approve: (\S+)$", text, re.M)
    cap = email_links.read(line.rsplit("/", 1)[1])
    assert (cap.user_id, cap.approval_id, cap.decision) == (alice.pk, approval.pk, "approve")


def test_an_outcome_is_recorded_on_a_fresh_connection_when_the_database_dropped_the_one_that_sent(mailoutbox):
    from django.db import connection, connections

    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    request_approval()
    outbox.fan_out()
    (claimed,) = notifications.claim()
    error = notifications.send(claimed)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    killer = connections.create_connection("default")
    with killer.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    killer.close()

    assert notifications.record(claimed, error) == "delivered"

    n = Notification.objects.get()
    assert (n.status, n.attempts, n.leased_until) == ("delivered", 1, None)
    assert len(mailoutbox) == 1


def test_a_slack_route_whose_channel_grant_was_removed_posts_nothing_and_its_post_is_recorded_failed(settings):
    settings.SLACK_BOT_TOKEN, settings.SLACK_SIGNING_SECRET = "xoxb-test", "signing-secret"
    grant = grant_channel("C0123ABC", "acme")
    route("acme", "slack", "C0123ABC")
    grant.delete()
    request_approval()

    outbox.fan_out()

    [post] = Notification.objects.filter(channel="slack")
    assert (post.status, post.attempts) == ("failed", 0)
    assert "not granted" in post.last_error
