"""A delegate linked to Slack gets a direct message (docs/identity.md, "Delegation"): no buttons, the console link
that decides for the person they stand in for; a decision by a delegate shows both names in the channel."""

from datetime import timedelta

import pytest

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import Delegation, Notification
from suspensions.principals import for_user
from suspensions.services import delegation_notices, delegations
from suspensions.slack import sender
from tests.helpers import notify_all

from .conftest import approver, posted, request_approval


def away(giver, to="bob"):
    made = delegations.create_delegation(
        principal=for_user(giver), to=to, scope="acme", ends_at=db_now() + timedelta(days=2)
    )
    return made


@pytest.mark.django_db(transaction=True)
def test_a_linked_delegate_gets_a_direct_message_without_buttons(slack):
    alice = approver("alice")
    approver("bob", slack_id="U0BOB", scope="globex")
    made = away(alice)
    Delegation.objects.filter(pk=made.pk).update(notified_at=db_now())
    approval = request_approval()
    notify_all()
    row = Notification.objects.get(channel="slack", recipient="U0BOB")
    assert (row.acting_for, row.status) == ("alice", "delivered")
    [dm] = [c for c in slack.of("chat.postMessage") if c.args.get("channel") == "U0BOB"]
    assert "blocks" not in dm.args
    assert "In place of alice" in dm.args["text"] and f"{approval.pk}/?acting_for=alice" in dm.args["text"]


def test_the_start_of_a_delegation_is_also_sent_to_the_delegates_slack(db, slack, mailoutbox):
    alice = approver("alice")
    approver("bob", slack_id="U0BOB", scope="globex")
    made = away(alice)
    assert delegation_notices.announce([made.pk]) == 1
    [dm] = slack.of("chat.postMessage")
    assert dm.args["channel"] == "U0BOB" and "alice is away" in dm.args["text"]
    assert [m.to for m in mailoutbox] == [["bob@example.com"]]


def test_a_decision_for_someone_shows_both_names_in_the_channel(db, slack):
    alice = approver("alice")
    bob = approver("bob", scope="globex")
    away(alice)
    approval = request_approval()
    posted(slack, approval)
    version = services.Version(run_id=approval.run_id, suspension_id=approval.pk, run_revision=2)
    services.decide(
        principal=for_user(bob), suspension_id=approval.pk, version=version, decision="approve", acting_for="alice"
    )
    approval.refresh_from_db()
    sender.update_messages(approval, channel="C0APPROVALS")
    [update] = slack.of("chat.update")
    assert "by user:bob for user:alice" in update.args["text"]
