"""Fixtures of the Slack tests: the fake Slack on 127.0.0.1, the settings that point at it, approvals and approvers."""

import pytest
from celery import current_app

import suspensions.tasks  # noqa: F401 - registers the answer tasks that the eager mode runs here
from suspensions.clock import db_now
from suspensions.models import Notification, NotificationChannel, NotificationKind, SlackIdentity
from suspensions.slack import sender
from tests.helpers import approval_pause, call, member, snapshot
from tests.slack_fake import FakeSlack

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TOKEN = "xoxb-test-token"
CHANNEL = "C0APPROVALS"


@pytest.fixture(autouse=True)
def answers_in_process():
    """Celery runs tasks in this process (eager): the answers a worker would send, sent by the same task code."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before


@pytest.fixture
def slack(settings):
    """The fake Slack, started, with Slack turned on and pointed at it; stopped at teardown."""
    fake = FakeSlack().start()
    settings.SLACK_BOT_TOKEN = TOKEN
    settings.SLACK_SIGNING_SECRET = SECRET
    settings.SLACK_API_URL = fake.url
    yield fake
    fake.stop()


def request_approval(scope="acme/support", agent="refund-agent", arguments='{"amount": 900}', **policy):
    """A real T2 suspend for approval, as an engine stores it (the engine token is the requester)."""
    return approval_pause(scope, agent=agent, calls=[call("c1", "send_refund", arguments)], **policy)


def approver(username, slack_id=None, scope="acme", email=None):
    """A staff user holding `approver` in `scope`, linked to Slack member `slack_id` when given."""
    user = member(username, {scope: ["approver"]}, is_staff=True, email=email or f"{username}@example.com")
    if slack_id:
        SlackIdentity.objects.create(user=user, slack_user_id=slack_id, linked_by="test")
    return user


def slack_request(approval, channel=CHANNEL, kind=NotificationKind.REQUEST):
    """A Slack notification row as the fan-out writes it for a channel route."""
    now = db_now()
    row = Notification(
        approval_id=approval.pk,
        run_id=approval.run_id,
        channel=NotificationChannel.SLACK,
        kind=kind,
        recipient=channel,
        next_attempt_at=now,
        created_at=now,
    )
    row.stamp_scope(approval.scope)
    row.save(force_insert=True)
    return row


def posted(fake, approval, channel=CHANNEL):
    """The approval's message posted to `channel` by the sender, its ts recorded as the delivery does; the call."""
    row = slack_request(approval, channel)
    sender.send(row)
    row.save(update_fields=["slack_ts"])
    return fake.of("chat.postMessage")[-1]


def written():
    """Everything a refusal must leave untouched (tests.helpers.snapshot), and the Slack links."""
    return {**snapshot(), "identities": sorted(SlackIdentity.objects.values_list("slack_user_id", "user_id"))}
