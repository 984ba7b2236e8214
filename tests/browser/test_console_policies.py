"""Approval policies on the console's approval page in a real Chromium (docs/policies.md), at 1360 px and on a 390 px
phone.

Edits (refused next to their field, then admitted), answers in words, a quorum of two
approvers in two browser contexts (one of them twice), the requester who may not decide,
and a denial after one vote. Screenshots: test-artifacts/console-policy-<case>-desktop.png
and -phone.png.
"""

import json

import pytest

from suspensions.models import Admission, Approval, ApprovalVote, Run
from suspensions.tokens import create_token
from tests.browser.conftest import PHONE, logged_in, no_overflow, shoot
from tests.helpers import call, client, continuation, member, post, register, snapshot

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1360, "height": 900}
VIEWPORTS = [pytest.param(DESKTOP, "desktop", id="1360"), pytest.param(PHONE, "phone", id="390")]
SCHEMA = {
    "type": "object",
    "required": ["order", "amount", "currency"],
    "additionalProperties": False,
    "properties": {
        "order": {"type": "string", "pattern": "^A-[0-9]+$"},
        "amount": {"type": "integer", "minimum": 1, "maximum": 500},
        "currency": {"enum": ["EUR", "USD"]},
    },
}
ASKED = '{"order": "A-1042", "amount": 900, "currency": "EUR"}'
# The error element must sit in the same field container as its textarea, right after it.
NEXT_TO_FIELD = """([name]) => {
  const field = document.querySelector(`textarea[name="${name}"]`);
  const errors = field.closest('.edit-call').querySelector('.field-errors');
  return !!errors && errors.previousElementSibling === field
    && errors.closest('.edit-call') === field.closest('.edit-call');
}"""


@pytest.fixture
def approvers(db):
    return [member(name, {"acme": ["approver"]}, is_staff=True) for name in ("alice", "bob")]


def paused(engine, approval=None, ttl=3600):
    run = register(engine, agent_id="refund-agent")
    pending = [
        call("call_1", "send_refund", ASKED, arguments_schema=SCHEMA, editable=True),
        call("call_2", "notify_customer", '{"order": "A-1042", "template": "refund_sent"}'),
    ]
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": pending,
        "continuation": continuation(),
        "ttl_seconds": ttl,
    }
    if approval is not None:
        body["approval"] = approval
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def open_approval(chromium, site, username, s, viewport):
    context, page = logged_in(chromium, site, username, viewport=viewport)
    page.goto(f"{site}/console/approvals/{s['id']}/")
    return context, page


def shoot_whole(page, name):
    """shoot() with the window as tall as the page: the sticky decision panel, which scrolls inside a
    shorter window, is then drawn whole in the full-page screenshot."""
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": page.evaluate("document.documentElement.scrollHeight")})
    shoot(page, name)
    page.set_viewport_size(size)


def message(page):
    return page.locator(".messages").inner_text()


@pytest.mark.parametrize(("viewport", "suffix"), VIEWPORTS)
def test_an_edit_is_refused_next_to_its_field_then_fixed_and_admitted(
    chromium, site, engine, approvers, viewport, suffix
):
    s = paused(engine)
    context, page = open_approval(chromium, site, "alice", s, viewport)
    assert page.locator("textarea[name^='arguments:']").count() == 1  # call_2 is not editable
    assert "amount (required): integer, at least 1, at most 500" in page.locator("#edit-0").inner_text()
    no_overflow(page)
    shoot_whole(page, f"console-policy-pending-{suffix}")
    field = page.locator("textarea[name='arguments:call_1']")
    bad = '{"order": "A-1042", "amount": 450, "currency": "GBP"}'
    field.fill(bad)
    before = snapshot()
    page.click("#approve-form button[type=submit]")
    page.wait_for_selector("#edit-refused")
    errors = page.locator("#edit-0 .field-errors")
    assert "$.currency" in errors.inner_text() and "'GBP' is not one of ['EUR', 'USD']" in errors.inner_text()
    assert page.evaluate(NEXT_TO_FIELD, ["arguments:call_1"])
    assert field.input_value() == bad
    assert snapshot() == before
    errors.scroll_into_view_if_needed()
    no_overflow(page)
    shoot_whole(page, f"console-policy-invalid-{suffix}")
    field.fill('{"order": "A-1042", "amount": 450, "currency": "EUR"}')
    page.click("#approve-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/")
    assert "Approved." in message(page)
    calls = json.loads(Admission.objects.get(suspension_id=s["id"]).input)["calls"]
    assert [(c["id"], c["edited"]) for c in calls] == [("call_1", True), ("call_2", False)]
    assert json.loads(calls[0]["arguments"])["amount"] == 450
    assert calls[1]["arguments"] == '{"order": "A-1042", "template": "refund_sent"}'
    page.goto(f"{site}/console/approvals/{s['id']}/")
    edited = page.locator(".call-edited")
    assert edited.count() == 1 and "Asked by the model" in edited.text_content() and "900" in edited.text_content()
    no_overflow(page)
    shoot_whole(page, f"console-policy-edited-{suffix}")
    context.close()


@pytest.mark.parametrize(("viewport", "suffix"), VIEWPORTS)
def test_an_approver_answers_in_words_instead(chromium, site, engine, approvers, viewport, suffix):
    s = paused(engine)
    context, page = open_approval(chromium, site, "alice", s, viewport)
    page.fill("#respond-form textarea[name=response]", "Refund 450 EUR now and offer a voucher for the rest.")
    page.click("#respond-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/")
    assert "Answered in words." in message(page)
    page.goto(f"{site}/console/approvals/{s['id']}/")
    assert "offer a voucher" in page.locator("#response").inner_text()
    no_overflow(page)
    shoot_whole(page, f"console-policy-responded-{suffix}")
    context.close()
    assert json.loads(Admission.objects.get(suspension_id=s["id"]).input)["decision"] == "respond"


@pytest.mark.parametrize(("viewport", "suffix"), VIEWPORTS)
def test_two_approvers_reach_the_quorum_and_the_requester_cannot_decide(chromium, site, approvers, viewport, suffix):
    erin = member("erin", {"acme": ["approver"]}, is_staff=True)
    _, secret = create_token(scope="acme", roles=["engine"], name="erin-engine", user=erin)
    s = paused(client(secret), approval={"quorum": 2, "on_expiry": {"escalate": {"extend_seconds": 1800}}})

    requester, page = open_approval(chromium, site, "erin", s, viewport)
    assert "so you cannot decide it" in page.locator("#requester-notice").inner_text()
    assert page.locator("#approve-form, #respond-form, #deny-form").count() == 0
    no_overflow(page)
    shoot_whole(page, f"console-policy-requester-{suffix}")
    requester.close()

    first, page = open_approval(chromium, site, "alice", s, viewport)
    assert "is escalated once: the deadline moves by 30 min" in page.locator("#policy-expiry").inner_text()
    page.fill("#approve-form textarea[name=reason]", "Checked the invoice.")
    page.click("#approve-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/{s['id']}/")
    assert "Your vote is recorded: 1 of 2. The run waits for another approver." in message(page)
    assert "You voted to approve" in page.locator("#my-vote").inner_text()
    assert "user:alice" in page.locator("#policy .votes").inner_text()
    no_overflow(page)
    shoot_whole(page, f"console-policy-voted-{suffix}")
    page.click("#approve-form button[type=submit]")  # the same vote again: the note came back in the form
    page.wait_for_url(f"{site}/console/approvals/{s['id']}/")
    assert "You had already voted to approve this" in message(page)
    first.close()
    assert ApprovalVote.objects.filter(suspension_id=s["id"]).count() == 1

    second, page = open_approval(chromium, site, "bob", s, viewport)
    assert "1 of 2" in page.locator("#policy-votes").inner_text()
    page.click("#approve-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/")
    assert "Approved. Yours was vote 2 of 2." in message(page)
    page.goto(f"{site}/console/approvals/{s['id']}/")
    assert page.locator("#policy .vote").count() == 2
    no_overflow(page)
    shoot_whole(page, f"console-policy-approved-{suffix}")
    second.close()
    assert json.loads(Admission.objects.get(suspension_id=s["id"]).input)["approvers"] == ["user:alice", "user:bob"]


@pytest.mark.parametrize(("viewport", "suffix"), VIEWPORTS)
def test_a_denial_after_one_vote_ends_the_approval(chromium, site, engine, approvers, viewport, suffix):
    s = paused(engine, approval={"quorum": 2, "on_expiry": "deny"})
    first, page = open_approval(chromium, site, "alice", s, viewport)
    page.click("#approve-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/{s['id']}/")
    first.close()
    second, page = open_approval(chromium, site, "bob", s, viewport)
    assert "the run is denied" in page.locator("#policy-expiry").inner_text()
    page.fill("#deny-form textarea[name=reason]", "Not before the audit.")
    page.click("#deny-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/")
    assert "Denied." in message(page)
    page.goto(f"{site}/console/approvals/{s['id']}/")
    assert "Votes cast: 1 of 2." in page.locator("#policy-votes").inner_text()
    no_overflow(page)
    shoot_whole(page, f"console-policy-denied-{suffix}")
    second.close()
    assert Run.objects.get(pk=s["run_id"]).error == "rejected: Not before the audit."
    assert Approval.objects.get(pk=s["id"]).status == "denied"


def test_the_last_button_of_a_tall_decision_panel_is_reachable_beside_a_long_conversation(
    chromium, site, engine, approvers
):
    run = register(engine, agent_id="refund-agent")
    pending = [call(f"call_{i}", "send_refund", ASKED, arguments_schema=SCHEMA, editable=True) for i in range(3)]
    messages = [{"role": "user", "content": "Where is my refund? " * 40} for _ in range(40)]
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": pending,
        "continuation": continuation(messages=messages, new_messages_from=0),
        "ttl_seconds": 3600,
        "approval": {"quorum": 2},
    }
    s = post(engine, f"/api/v1/runs/{run['id']}/suspend", body).json()
    context, page = open_approval(chromium, site, "alice", s, DESKTOP)
    deny = page.locator("#deny-form button[type=submit]")
    deny.scroll_into_view_if_needed()
    top, bottom, height = page.evaluate(
        "el => { const r = el.getBoundingClientRect(); return [r.top, r.bottom, innerHeight]; }", deny.element_handle()
    )
    assert 0 <= top and bottom <= height, (top, bottom, height)
    context.close()
