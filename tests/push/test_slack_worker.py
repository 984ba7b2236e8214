"""Slack approvals end to end (docs/notifications.md, "Slack"): a real Celery worker posts and updates messages on the
fake Slack.

The worker sends every Slack call (posts from the request's fan-out, updates
from the decision's); presses come back through the interactions endpoint in
this process, signed as Slack signs them.
"""

import pytest

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import (
    Approval,
    MessageStatus,
    Notification,
    NotificationChannel,
    NotificationKind,
    NotificationRoute,
    Run,
)
from suspensions.principals import for_user
from tests.factories import principal
from tests.helpers import grant_channel
from tests.processes import wait_for
from tests.slack.conftest import CHANNEL, SECRET, TOKEN, approver, request_approval, slack  # noqa: F401 (fixture)
from tests.slack_fake import button_press, deny_submission, post_interaction

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slack_worker(worker, slack):  # noqa: F811 (the fixture imported above)
    """A worker that talks to the fake Slack, and a Slack route of scope `acme` to CHANNEL."""
    route = NotificationRoute(kind=NotificationChannel.SLACK, target=CHANNEL, created_at=db_now())
    route.stamp_scope("acme")
    route.save(force_insert=True)
    grant_channel(CHANNEL, "acme")
    worker(SLACK_BOT_TOKEN=TOKEN, SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack.url)
    return slack


def message_of(fake, approval):
    """The approval's message once the worker posted it (the chat.postMessage naming its approval id)."""

    def found():
        return [c for c in fake.of("chat.postMessage") if str(approval.pk) in str(c.args.get("blocks"))]

    wait_for(found, "the worker to post the approval's Slack message")
    return found()[0]


def updated(fake, approval):
    """Wait until the approval's DECIDED notification is delivered; the chat.update calls made by then."""

    def delivered():
        return Notification.objects.filter(
            approval_id=approval.pk, kind=NotificationKind.DECIDED, status=MessageStatus.DELIVERED
        ).exists()

    wait_for(delivered, "the worker to update the Slack message")
    return fake.of("chat.update")


def test_a_quorum_of_two_decided_by_two_slack_users_updates_the_message_once(client, slack_worker):
    approver("alice", "UALICE")
    approver("bob", "UBOB")
    approval = request_approval(quorum=2)
    message = message_of(slack_worker, approval)

    post_interaction(client, button_press(message, "approve", "UALICE"), SECRET)
    post_interaction(client, button_press(message, "approve", "UBOB"), SECRET)

    [update] = updated(slack_worker, approval)
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL, message.answer["ts"])
    assert update.args["blocks"][0]["text"]["text"] == "*Approved* by user:bob"
    assert Approval.objects.get(pk=approval.pk).status == "approved"
    assert Run.objects.get(pk=approval.run_id).state == "running"


def test_a_deny_with_a_reason_from_the_modal_updates_the_message(client, slack_worker):
    approver("alice", "UALICE")
    approval = request_approval()
    message = message_of(slack_worker, approval)

    post_interaction(client, button_press(message, "deny", "UALICE"), SECRET)
    post_interaction(client, deny_submission(slack_worker.of("views.open")[0], "UALICE", "not this month"), SECRET)

    [update] = updated(slack_worker, approval)
    assert update.args["ts"] == message.answer["ts"]
    assert update.args["blocks"][0]["text"]["text"] == "*Denied* by user:alice: not this month"


def test_the_message_is_updated_after_a_console_decision_too(slack_worker):
    carol = approver("carol")
    approval = request_approval()
    message = message_of(slack_worker, approval)
    run = Run.objects.get(pk=approval.run_id)
    version = services.Version(run_id=run.id, suspension_id=approval.pk, run_revision=run.revision)

    services.decide(principal=for_user(carol), suspension_id=approval.pk, version=version, decision="approve")

    [update] = updated(slack_worker, approval)
    assert update.args["ts"] == message.answer["ts"]
    assert update.args["blocks"][0]["text"]["text"] == "*Approved* by user:carol"
    assert not [b for b in update.args["blocks"] if b["type"] == "actions"]


def test_a_slack_that_fails_at_first_gets_the_message_on_a_retry(slack_worker):
    slack_worker.failures["chat.postMessage"] = ["ratelimited"]
    approval = request_approval()

    message_of(slack_worker, approval)

    row = Notification.objects.get(approval_id=approval.pk, channel=NotificationChannel.SLACK)
    wait_for(lambda: Notification.objects.get(pk=row.pk).status == MessageStatus.DELIVERED, "the retry's outcome")
    row.refresh_from_db()
    assert row.attempts == 2
    assert len(slack_worker.of("chat.postMessage")) == 2
    assert row.slack_ts == slack_worker.of("chat.postMessage")[1].answer["ts"]


def cancel_run(approval):
    """The engine cancels the paused run: not an approval event, so its message keeps its buttons (stale)."""
    run = Run.objects.get(pk=approval.run_id)
    services.cancel_run(principal=principal("token:engine", "acme", "engine"), run_id=run.id, revision=run.revision)


def test_a_pressers_answer_and_a_stale_messages_edit_are_sent_by_the_worker(client, slack_worker):
    approver("alice", "UALICE")
    approval = request_approval()
    message = message_of(slack_worker, approval)
    cancel_run(approval)

    response = post_interaction(client, button_press(message, "approve", "UALICE"), SECRET)

    assert response.status_code == 200
    wait_for(lambda: slack_worker.of("chat.update"), "the worker to edit the stale message")
    wait_for(lambda: slack_worker.of("chat.postEphemeral"), "the worker to answer the presser")
    [update] = slack_worker.of("chat.update")
    assert update.args["ts"] == message.answer["ts"]
    assert not [b for b in update.args["blocks"] if b["type"] == "actions"]
    assert slack_worker.of("chat.postEphemeral")[0].args["text"].startswith("This message is out of date")
