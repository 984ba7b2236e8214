"""The Slack sender (docs/notifications.md, "Slack"): the Block Kit message of an approval, its buttons, and its update
once decided."""

import json

import pytest
from slack_sdk.errors import SlackApiError

from suspensions import notify, services
from suspensions.models import NotificationKind, Run
from suspensions.slack import blocks, sender
from tests.factories import principal

from .conftest import CHANNEL, TOKEN, posted, request_approval, slack_request

pytestmark = pytest.mark.django_db

LONG = "y" * 5000


def texts(call):
    return "\n".join(json.dumps(b) for b in call.args["blocks"])


def test_the_message_shows_agent_scope_deadline_and_each_call_with_truncated_arguments(slack, settings):
    settings.CONSOLE_BASE_URL = "https://suspensions.example.com"
    approval = request_approval(arguments=json.dumps({"amount": 900, "note": LONG}))

    message = posted(slack, approval)

    assert message.token == TOKEN
    assert message.args["channel"] == CHANNEL
    assert "refund-agent wants to call send_refund" in message.args["text"]
    shown = texts(message)
    assert "refund-agent" in shown and "acme/support" in shown and "send_refund" in shown
    assert notify.deadline_text(approval) in shown
    assert LONG not in shown
    assert "y" * (notify.ARGUMENT_CHARS - 40) in shown


def test_the_buttons_carry_the_approval_and_the_version_and_open_links_to_the_console(slack, settings):
    settings.CONSOLE_BASE_URL = "https://suspensions.example.com"
    approval = request_approval()

    message = posted(slack, approval)

    [actions] = [b for b in message.args["blocks"] if b["type"] == "actions"]
    approve, deny, open_ = actions["elements"]
    assert (approve["action_id"], deny["action_id"], open_["action_id"]) == ("approve", "deny", "open")
    pressed = blocks.parse_value(approve["value"])
    run = Run.objects.get(pk=approval.run_id)
    assert (pressed.approval_id, pressed.run_id, pressed.run_revision) == (approval.pk, run.id, run.revision)
    assert deny["value"] == approve["value"]
    assert open_["url"] == f"https://suspensions.example.com/console/approvals/{approval.pk}/"


def test_engine_text_cannot_become_a_mention_or_a_link(slack):
    approval = request_approval(agent="<!channel>", arguments='{"to": "<https://evil.example|click>"}')

    message = posted(slack, approval)

    shown = texts(message) + message.args["text"]
    assert "<!channel>" not in shown
    assert "<https://evil.example" not in shown
    assert "&lt;!channel&gt;" in shown


def test_the_ts_of_the_posted_message_is_kept_on_the_notification(slack):
    approval = request_approval()
    row = slack_request(approval)

    sender.send(row)

    assert row.slack_ts == slack.of("chat.postMessage")[0].answer["ts"]


def test_a_request_already_posted_is_never_posted_twice(slack):
    approval = request_approval()
    row = slack_request(approval)
    sender.send(row)

    sender.send(row)

    assert len(slack.of("chat.postMessage")) == 1


def test_decided_updates_the_posted_message_with_the_outcome_and_no_buttons(slack):
    approval = request_approval()
    message = posted(slack, approval)
    deny(approval, "too much")

    sender.send(slack_request(approval, kind=NotificationKind.DECIDED))

    [update] = slack.of("chat.update")
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL, message.answer["ts"])
    assert update.args["blocks"][0]["text"]["text"] == "*Denied* by user:carol: too much"
    assert not [b for b in update.args["blocks"] if b["type"] == "actions"]
    assert update.args["text"].startswith("Denied by user:carol")


def test_a_request_posted_after_the_decision_shows_the_outcome_without_buttons(slack):
    approval = request_approval()
    deny(approval, "no")

    message = posted(slack, approval)

    assert message.args["text"].startswith("Denied")
    assert not [b for b in message.args["blocks"] if b["type"] == "actions"]


def test_decided_before_its_request_is_posted_waits_for_it(slack):
    approval = request_approval()
    slack_request(approval)
    deny(approval, "no")

    with pytest.raises(sender.NotPostedYet):
        sender.send(slack_request(approval, kind=NotificationKind.DECIDED))


def test_a_slack_error_raises_for_the_delivery_to_retry(slack):
    slack.failures["chat.postMessage"] = ["channel_not_found"]
    row = slack_request(request_approval())

    with pytest.raises(SlackApiError):
        sender.send(row)

    assert row.slack_ts == ""


def deny(approval, reason):
    run = Run.objects.get(pk=approval.run_id)
    version = services.Version(run_id=run.id, suspension_id=approval.pk, run_revision=run.revision)
    console = principal("user:carol", "acme", "approver")
    services.decide(principal=console, suspension_id=approval.pk, version=version, decision="deny", reason=reason)
    approval.refresh_from_db()


def test_an_escalation_is_posted_as_one(slack):
    approval = request_approval()

    sender.send(slack_request(approval, kind=NotificationKind.ESCALATION))

    [message] = slack.of("chat.postMessage")
    assert message.args["blocks"][0]["text"]["text"] == "Escalated: approval needed"
