"""POST /integrations/slack/interactions (docs/notifications.md, "Slack"): signed presses decide through the one decide
service."""

import json
import time

import pytest
from django.test import Client, TestCase

from suspensions import services
from suspensions.models import Admission, Approval, ApprovalVote, Run, SlackIdentity
from suspensions.slack import client as slack_client
from tests.factories import principal
from tests.helpers import call, continuation
from tests.helpers import client as api_client
from tests.slack_fake import (
    INTERACTIONS_PATH,
    button_press,
    deny_submission,
    form_body,
    post_interaction,
    signed_headers,
)

from .conftest import CHANNEL, SECRET, approver, posted, request_approval, written

pytestmark = pytest.mark.django_db


def press(client, fake, message, action, user):
    return post_interaction(client, button_press(message, action, user), SECRET)


def ephemerals(fake, user):
    return [c.args["text"] for c in fake.of("chat.postEphemeral") if c.args["user"] == user]


def test_approve_by_a_linked_approver_admits_the_run_at_once(client, slack):
    approver("alice", "UALICE")
    approval = request_approval()
    message = posted(slack, approval)

    response = press(client, slack, message, "approve", "UALICE")

    assert response.status_code == 200
    approval.refresh_from_db()
    assert approval.status == "approved"
    assert approval.decided_by == "user:alice"
    assert Run.objects.get(pk=approval.run_id).state == "running"
    assert Admission.objects.filter(suspension_id=approval.pk).count() == 1
    assert ephemerals(slack, "UALICE") == ["You approved it: the run goes on."]
    assert {c.args["channel"] for c in slack.of("chat.postEphemeral")} == {CHANNEL}


def test_a_quorum_of_two_is_reached_by_two_slack_users(client, slack):
    approver("alice", "UALICE")
    approver("bob", "UBOB")
    approval = request_approval(quorum=2)
    message = posted(slack, approval)

    press(client, slack, message, "approve", "UALICE")
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    press(client, slack, message, "approve", "UBOB")

    approval.refresh_from_db()
    assert approval.status == "approved"
    assert sorted(ApprovalVote.objects.values_list("voter", flat=True)) == ["user:alice", "user:bob"]
    assert ephemerals(slack, "UALICE") == ["Your vote is recorded: 1 of 2 approvals."]
    assert ephemerals(slack, "UBOB") == ["You approved it: the run goes on."]


def test_deny_opens_a_modal_and_its_submission_denies_with_the_reason(client, slack):
    approver("alice", "UALICE")
    approval = request_approval()
    message = posted(slack, approval)

    opened = press(client, slack, message, "deny", "UALICE")
    assert opened.status_code == 200
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    [modal] = slack.of("views.open")
    assert modal.args["trigger_id"] == "T-1"

    submitted = post_interaction(client, deny_submission(modal, "UALICE", "amount too high"), SECRET)

    assert submitted.status_code == 200
    assert submitted.content == b""
    approval.refresh_from_db()
    assert (approval.status, approval.note, approval.decided_by) == ("denied", "amount too high", "user:alice")
    run = Run.objects.get(pk=approval.run_id)
    assert (run.state, run.error) == ("failed", "rejected: amount too high")


def test_a_denial_without_a_reason_stays_in_the_modal_and_writes_nothing(client, slack):
    approver("alice", "UALICE")
    approval = request_approval()
    press(client, slack, posted(slack, approval), "deny", "UALICE")
    before = written()

    response = post_interaction(client, deny_submission(slack.of("views.open")[0], "UALICE", "  "), SECRET)

    assert response.json() == {"response_action": "errors", "errors": {"reason": "A denial needs a reason."}}
    assert written() == before


def test_a_slack_retry_of_the_same_press_decides_once(client, slack):
    approver("alice", "UALICE")
    approval = request_approval()
    payload = button_press(posted(slack, approval), "approve", "UALICE")

    first = post_interaction(client, payload, SECRET)
    after_first = written()
    again = post_interaction(client, payload, SECRET)

    assert (first.status_code, again.status_code) == (200, 200)
    assert written() == after_first
    assert Admission.objects.filter(suspension_id=approval.pk).count() == 1
    assert ephemerals(slack, "UALICE") == ["You approved it: the run goes on.", "Your approval was already recorded."]


def test_a_retried_vote_short_of_the_quorum_is_recorded_once(client, slack):
    approver("alice", "UALICE")
    approval = request_approval(quorum=2)
    payload = button_press(posted(slack, approval), "approve", "UALICE")

    post_interaction(client, payload, SECRET)
    after_first = written()
    post_interaction(client, payload, SECRET)

    assert written() == after_first
    assert ApprovalVote.objects.filter(suspension_id=approval.pk).count() == 1
    assert ephemerals(slack, "UALICE")[1] == "Your vote was already recorded: 1 of 2 approvals."


def test_a_retried_denial_from_the_modal_denies_once(client, slack):
    approver("alice", "UALICE")
    approval = request_approval()
    press(client, slack, posted(slack, approval), "deny", "UALICE")
    submission = deny_submission(slack.of("views.open")[0], "UALICE", "no")

    post_interaction(client, submission, SECRET)
    after_first = written()
    again = post_interaction(client, submission, SECRET)

    assert again.status_code == 200
    assert written() == after_first


def test_a_stale_message_is_refused_updated_and_never_applied_to_the_next_pause(client, slack):
    approver("alice", "UALICE")
    approval = request_approval()
    message = posted(slack, approval)
    run = Run.objects.get(pk=approval.run_id)
    version = services.Version(run_id=run.id, suspension_id=approval.pk, run_revision=run.revision)
    console = principal("user:carol", "acme", "approver")
    services.decide(principal=console, suspension_id=approval.pk, version=version, decision="approve")
    before = written()

    response = press(client, slack, message, "approve", "UALICE")

    assert response.status_code == 200
    assert written() == before
    [update] = slack.of("chat.update")
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL, message.answer["ts"])
    assert update.args["blocks"][0]["text"]["text"] == "*Approved* by user:carol"
    assert not [b for b in update.args["blocks"] if b["type"] == "actions"]
    assert ephemerals(slack, "UALICE")[0].startswith("This message is out of date")


def test_an_old_message_never_decides_a_later_pause_of_the_same_run(client, slack):
    approver("alice", "UALICE")
    first = request_approval()
    old_message = posted(slack, first)
    paused_again = later_pause(first)
    before = written()

    response = press(client, slack, old_message, "approve", "UALICE")

    assert response.status_code == 200
    assert written() == before
    assert Approval.objects.get(pk=paused_again.pk).status == "pending"
    assert "out of date" in ephemerals(slack, "UALICE")[0]


def console_decides(approval):
    """Carol approves `approval` in the console, so a message still showing its buttons is stale."""
    run = Run.objects.get(pk=approval.run_id)
    version = services.Version(run_id=run.id, suspension_id=approval.pk, run_revision=run.revision)
    services.decide(
        principal=principal("user:carol", "acme", "approver"),
        suspension_id=approval.pk,
        version=version,
        decision="approve",
    )


def later_pause(approval):
    """The run's pause approved by someone else in the console, started, then paused for approval again."""
    run = Run.objects.get(pk=approval.run_id)
    version = services.Version(run_id=run.id, suspension_id=approval.pk, run_revision=run.revision)
    console = principal("user:carol", "acme", "approver")
    claimed = services.decide(principal=console, suspension_id=approval.pk, version=version, decision="approve")
    engine = principal("token:engine", "acme/support", "engine")
    started = services.start_admission(principal=engine, admission_id=claimed.admission.id)
    pause = services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=started.run.revision,
        reason="approval",
        pending=[call("c2", "send_refund", '{"amount": 901}')],
        continuation=continuation(),
        ttl_seconds=3600,
    )
    return Approval.objects.get(pk=pause.id)


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no headers"),
        pytest.param({"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(int(time.time()))}, id="no signature"),
        pytest.param({"HTTP_X_SLACK_REQUEST_TIMESTAMP": "soon", "HTTP_X_SLACK_SIGNATURE": "v0=00"}, id="bad timestamp"),
        pytest.param(
            {"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(int(time.time())), "HTTP_X_SLACK_SIGNATURE": "v0=" + "0" * 64},
            id="forged signature",
        ),
    ],
)
def test_an_unsigned_or_forged_press_is_401_and_writes_nothing(client, slack, headers):
    approver("alice", "UALICE")
    approval = request_approval()
    payload = button_press(posted(slack, approval), "approve", "UALICE")
    before = written()

    response = post_interaction(client, payload, SECRET, headers=headers)

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert written() == before
    assert slack.of("chat.postEphemeral") == []


def test_a_press_signed_with_another_secret_is_401(client, slack):
    approver("alice", "UALICE")
    payload = button_press(posted(slack, request_approval()), "approve", "UALICE")
    before = written()

    response = post_interaction(client, payload, "another-apps-secret")

    assert response.status_code == 401
    assert written() == before


def test_a_replay_older_than_five_minutes_is_401_and_writes_nothing(client, slack):
    approver("alice", "UALICE")
    payload = button_press(posted(slack, request_approval()), "approve", "UALICE")
    before = written()

    response = post_interaction(client, payload, SECRET, timestamp=int(time.time()) - 6 * 60)

    assert response.status_code == 401
    assert written() == before


def test_an_unlinked_slack_user_gets_an_ephemeral_answer_and_nothing_is_written(client, slack):
    approver("alice", "UALICE")
    slack.emails["USTRANGER"] = "stranger@elsewhere.example"
    message = posted(slack, request_approval())
    before = written()

    response = press(client, slack, message, "approve", "USTRANGER")

    assert response.status_code == 200
    assert written() == before
    [answer] = ephemerals(slack, "USTRANGER")
    assert "not linked" in answer
    assert slack.of("users.info")[0].args["user"] == "USTRANGER"


def test_a_linked_user_without_approver_over_the_scope_is_not_allowed(client, slack):
    approver("olga", "UOLGA", scope="other")
    message = posted(slack, request_approval())
    before = written()

    press(client, slack, message, "deny", "UOLGA")

    assert written() == before
    assert slack.of("views.open") == []
    assert "not linked" in ephemerals(slack, "UOLGA")[0]


def test_an_approver_found_by_slack_email_decides_and_is_linked(client, slack):
    bob = approver("bob", email="Bob@Example.com")
    slack.emails["UBOB"] = "bob@example.com"
    approval = request_approval()

    press(client, slack, posted(slack, approval), "approve", "UBOB")

    assert Approval.objects.get(pk=approval.pk).decided_by == "user:bob"
    assert SlackIdentity.objects.get(slack_user_id="UBOB").user == bob


def test_once_linked_by_email_the_next_press_needs_no_lookup(client, slack):
    approver("bob", email="bob@example.com")
    slack.emails["UBOB"] = "bob@example.com"
    first, second = request_approval(), request_approval()
    press(client, slack, posted(slack, first), "approve", "UBOB")

    press(client, slack, posted(slack, second, channel="C0OTHER"), "approve", "UBOB")

    assert Approval.objects.get(pk=second.pk).decided_by == "user:bob"
    assert len(slack.of("users.info")) == 1


def test_an_email_match_without_the_approver_role_links_nobody(client, slack):
    approver("olga", scope="other", email="olga@example.com")
    slack.emails["UOLGA"] = "olga@example.com"
    message = posted(slack, request_approval())
    before = written()

    press(client, slack, message, "approve", "UOLGA")

    assert written() == before


def test_separation_of_duties_is_the_decide_services_and_writes_nothing(client, slack):
    alice = approver("alice", "UALICE")
    approval = request_approval()
    Approval.objects.filter(pk=approval.pk).update(exclude_requester=True, requester_user_id=alice.pk)
    message = posted(slack, approval)
    before = written()

    press(client, slack, message, "approve", "UALICE")

    assert written() == before
    assert "may not decide" in ephemerals(slack, "UALICE")[0]


def test_a_signed_body_of_five_thousand_form_fields_is_a_problem_json_400_and_writes_nothing(client, slack):
    before = written()
    body = "&".join(f"f{i}=x" for i in range(5000))

    response = client.post(
        INTERACTIONS_PATH, data=body, content_type="application/x-www-form-urlencoded", **signed_headers(body, SECRET)
    )

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "invalid_request"
    assert written() == before


def test_too_many_form_fields_to_the_api_is_a_problem_json_400_and_the_console_keeps_its_page(client, token):
    body = "&".join(f"f{i}=x" for i in range(5000))
    operator = api_client(token("acme", ["operator"], "ops"))

    api = operator.post("/api/v1/notification-routes", data=body, content_type="application/x-www-form-urlencoded")
    console = client.post("/console/login/", data=body, content_type="application/x-www-form-urlencoded")

    assert (api.status_code, api["Content-Type"], api.json()["code"]) == (
        400,
        "application/problem+json",
        "invalid_request",
    )
    assert console.status_code == 400
    assert console["Content-Type"].startswith("text/html")


def test_a_signed_body_that_is_not_an_interaction_is_400_and_writes_nothing(client, slack):
    before = written()
    body = "payload=" + "not json"

    response = client.post(
        INTERACTIONS_PATH, data=body, content_type="application/x-www-form-urlencoded", **signed_headers(body, SECRET)
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert written() == before


def test_a_button_value_that_is_not_ours_is_400(client, slack):
    approver("alice", "UALICE")
    payload = button_press(posted(slack, request_approval()), "approve", "UALICE")
    payload["actions"][0]["value"] = json.dumps({"approval": "nope"})
    before = written()

    response = post_interaction(client, payload, SECRET)

    assert response.status_code == 400
    assert written() == before


def test_the_endpoint_is_404_while_slack_is_not_configured(client, settings):
    settings.SLACK_BOT_TOKEN = ""
    settings.SLACK_SIGNING_SECRET = SECRET
    body = form_body({"type": "block_actions"})

    response = client.post(
        INTERACTIONS_PATH, data=body, content_type="application/x-www-form-urlencoded", **signed_headers(body, SECRET)
    )

    assert response.status_code == 404


BAD_IDS = '{"approval": "x", "run_id": "y", "revision": 1}'


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda p: p.update(actions=[]), id="no action"),
        pytest.param(lambda p: p.update(user="UALICE"), id="user not an object"),
        pytest.param(lambda p: p["actions"][0].update(value=["a list"]), id="value not text"),
        pytest.param(lambda p: p["actions"][0].update(value='{"approval": 1, "approval": 2}'), id="duplicate keys"),
        pytest.param(lambda p: p["actions"][0].update(value="[" * 5000 + "]" * 5000), id="nested too deep"),
        pytest.param(
            lambda p: p["actions"][0].update(value='{"approval": "x", "run_id": "y", "revision": 1}'), id="ids"
        ),
        pytest.param(lambda p: p.update(type="view_submission", view={"callback_id": "deny"}), id="no metadata"),
    ],
)
def test_a_signed_payload_we_did_not_send_is_400_never_a_500_and_writes_nothing(client, slack, spoil):
    approver("alice", "UALICE")
    payload = button_press(posted(slack, request_approval()), "approve", "UALICE")
    spoil(payload)
    before = written()

    response = post_interaction(client, payload, SECRET)

    assert response.status_code == 400
    assert written() == before


def test_slack_needs_no_csrf_token(slack):
    approver("alice", "UALICE")
    approval = request_approval()
    payload = button_press(posted(slack, approval), "approve", "UALICE")

    response = post_interaction(Client(enforce_csrf_checks=True), payload, SECRET)

    assert response.status_code == 200
    assert Approval.objects.get(pk=approval.pk).status == "approved"


def test_the_open_button_is_a_link_and_its_press_changes_nothing(client, slack):
    approver("alice", "UALICE")
    payload = button_press(posted(slack, request_approval()), "open", "UALICE")
    before = written()

    response = post_interaction(client, payload, SECRET)

    assert response.status_code == 200
    assert written() == before
    assert slack.of("chat.postEphemeral") == []


# -- the answer waits on one Slack call at most (docs/notifications.md, What happens where) ---------------


def press_and_hold(client, payload):
    """POST a press as Slack does; (the answer, what it left to send after it), the latter not sent yet."""
    body = form_body(payload)
    with TestCase.captureOnCommitCallbacks(execute=False) as after:
        response = client.post(
            INTERACTIONS_PATH,
            data=body,
            content_type="application/x-www-form-urlencoded",
            **signed_headers(body, SECRET),
        )
    return response, after


def methods(fake):
    return sorted(c.method for c in fake.calls)


def test_a_stale_press_by_an_approver_found_by_email_answers_after_one_slack_call_and_edits_later(client, slack):
    approver("bob", email="bob@example.com")
    slack.emails["UBOB"] = "bob@example.com"
    approval = request_approval()
    message = posted(slack, approval)
    console_decides(approval)
    slack.calls.clear()

    response, after = press_and_hold(client, button_press(message, "approve", "UBOB"))

    assert response.status_code == 200
    assert methods(slack) == ["users.info"]
    for send in after:
        send()
    assert methods(slack) == ["chat.postEphemeral", "chat.update", "users.info"]
    assert slack.of("chat.update")[0].args["ts"] == message.answer["ts"]


def test_an_approve_answers_with_no_slack_call_and_its_ephemeral_follows(client, slack):
    approver("alice", "UALICE")
    message = posted(slack, request_approval())
    slack.calls.clear()

    response, after = press_and_hold(client, button_press(message, "approve", "UALICE"))

    assert response.status_code == 200
    assert slack.calls == []
    for send in after:
        send()
    assert ephemerals(slack, "UALICE") == ["You approved it: the run goes on."]


def test_a_deny_by_an_unlinked_member_opens_the_dialog_and_the_submission_looks_them_up(client, slack):
    bob = approver("bob", email="bob@example.com")
    slack.emails["UBOB"] = "bob@example.com"
    approval = request_approval()
    message = posted(slack, approval)
    slack.calls.clear()

    pressed, _ = press_and_hold(client, button_press(message, "deny", "UBOB"))
    assert (pressed.status_code, methods(slack)) == (200, ["views.open"])
    submitted, _ = press_and_hold(client, deny_submission(slack.of("views.open")[0], "UBOB", "too much"))

    assert submitted.status_code == 200
    assert methods(slack) == ["users.info", "views.open"]
    assert Approval.objects.get(pk=approval.pk).decided_by == "user:bob"
    assert SlackIdentity.objects.get(slack_user_id="UBOB").user == bob


def test_a_deny_submission_by_a_stranger_is_refused_in_the_dialog_and_writes_nothing(client, slack):
    approver("alice", "UALICE")
    slack.emails["USTRANGER"] = "stranger@elsewhere.example"
    message = posted(slack, request_approval())
    press(client, slack, message, "deny", "USTRANGER")
    before = written()

    response = post_interaction(client, deny_submission(slack.of("views.open")[0], "USTRANGER", "no"), SECRET)

    assert response.json()["response_action"] == "errors"
    assert "not linked" in response.json()["errors"]["reason"]
    assert written() == before


def test_the_one_slack_call_of_a_press_is_bounded_well_inside_slacks_three_seconds_and_never_retried(settings):
    settings.SLACK_BOT_TOKEN, settings.SLACK_API_URL = "xoxb-x", "http://127.0.0.1:9/api/"
    bounded = slack_client.interactive_client()

    assert bounded.timeout <= slack_client.SLACK_ANSWER_BUDGET / 2
    assert bounded.retry_handlers == []


def test_a_users_info_slower_than_the_bound_leaves_the_presser_unrecognised_and_decides_nothing(client, slack):
    approver("bob", email="bob@example.com")
    slack.emails["UBOB"] = "bob@example.com"
    slack.delays["users.info"] = slack_client.INTERACTIVE_TIMEOUT + 0.5
    message = posted(slack, request_approval())
    before = written()

    response = press(client, slack, message, "approve", "UBOB")

    assert response.status_code == 200
    assert written() == before
    assert "not linked" in ephemerals(slack, "UBOB")[0]
