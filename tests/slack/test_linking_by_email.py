"""An unlinked Slack member is linked by the email of their Slack profile when it is exactly one active person's
(docs/notifications.md, "Who a Slack user is"); otherwise the press is refused with how to link, and nothing is
written."""

import pytest

from suspensions.models import Approval, SlackIdentity
from suspensions.slack.approvers import NOT_LINKED
from tests.slack_fake import button_press, post_interaction

from .conftest import SECRET, approver, posted, request_approval, written

pytestmark = pytest.mark.django_db


def press(client, message, user):
    return post_interaction(client, button_press(message, "approve", user), SECRET)


def told(fake, user):
    return [c.args["text"] for c in fake.of("chat.postEphemeral") if c.args["user"] == user]


def test_an_unmatched_member_is_told_how_to_link_and_nothing_is_written(client, slack):
    approver("alice", email="alice@example.com")
    slack.emails["USTRANGER"] = "stranger@elsewhere.example"
    message = posted(slack, request_approval())
    before = written()

    press(client, message, "USTRANGER")

    assert written() == before
    assert told(slack, "USTRANGER") == [NOT_LINKED.format(member="USTRANGER")]
    assert "USTRANGER" in told(slack, "USTRANGER")[0]


def test_an_email_two_active_people_share_links_nobody(client, slack):
    approver("alice", email="shared@example.com")
    approver("alice2", email="shared@example.com")
    slack.emails["USHARED"] = "shared@example.com"
    approval = request_approval()
    message = posted(slack, approval)
    before = written()

    press(client, message, "USHARED")

    assert written() == before
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    assert told(slack, "USHARED") == [NOT_LINKED.format(member="USHARED")]


def test_a_deactivated_account_with_the_same_email_does_not_stop_the_active_one_being_linked(client, slack):
    old = approver("old-alice", email="alice@example.com")
    old.is_active = False
    old.save()
    alice = approver("alice", email="alice@example.com")
    slack.emails["UALICE"] = "alice@example.com"
    approval = request_approval()

    press(client, posted(slack, approval), "UALICE")

    assert Approval.objects.get(pk=approval.pk).decided_by == "user:alice"
    assert SlackIdentity.objects.get(slack_user_id="UALICE").user == alice


def test_a_deactivated_person_whose_slack_email_matches_is_neither_linked_nor_heard(client, slack):
    leaver = approver("leaver", email="leaver@example.com")
    leaver.is_active = False
    leaver.save()
    slack.emails["ULEAVER"] = "leaver@example.com"
    message = posted(slack, request_approval())
    before = written()

    press(client, message, "ULEAVER")

    assert written() == before
    assert told(slack, "ULEAVER") == [NOT_LINKED.format(member="ULEAVER")]
