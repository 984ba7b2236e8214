"""Approval policies on the console's approval page (docs/policies.md, "Quorum and separation of duties"): edits,
answers in words, quorum, the requester.

Pauses are stored through the API with an engine token; decisions go through the
console's forms, which call the API's own decide service.
"""

import json
import re
from datetime import timedelta
from html import unescape

import pytest
from django.test import Client
from django.utils import timezone

from suspensions import services
from suspensions.models import Admission, Approval, ApprovalVote, ClosureReceipt, Run
from suspensions.tokens import create_token
from tests.closure_setup import OPERATOR, closure_request, started
from tests.console.test_console import page
from tests.helpers import call, client, continuation, member, post, register, snapshot, version

SCHEMA = {
    "type": "object",
    "required": ["amount", "currency"],
    "additionalProperties": False,
    "properties": {"amount": {"type": "integer", "maximum": 500}, "currency": {"enum": ["EUR", "USD"]}},
}
ASKED = '{"amount": 900, "currency": "EUR"}'
READABLE = re.compile(r"\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}:\d{2} UTC")


def refund(call_id="c1", arguments=ASKED):
    return call(call_id, "send_refund", arguments, arguments_schema=SCHEMA, editable=True)


def paused(engine, pending=None, scope=None, **extra):
    run = register(engine, scope)
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": pending or [refund()],
        "continuation": continuation(),
        "ttl_seconds": 600,
        **extra,
    }
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def signed_in(name, grants=None):
    c = Client()
    c.force_login(member(name, grants or {"acme": ["approver"]}, is_staff=True))
    return c


@pytest.fixture
def alice(db):
    return signed_in("alice")


@pytest.fixture
def bob(db):
    return signed_in("bob")


def decide(c, s, decision="approve", follow=True, **fields):
    form = {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"], "decision": decision}
    return c.post(f"/console/approvals/{s['id']}/decide", {**form, **fields}, follow=follow)


def messages_in(response):
    return unescape(" ".join(re.findall(r'class="message message-\w+">([^<]*)<', response.content.decode())))


def field_box(html, index):
    """The container of the index-th edit field: from its opening to the next field or the end of the form."""
    start = html.index(f'id="edit-{index}"')
    ends = [i for i in (html.find('class="edit-call', start + 1), html.find("</form>", start)) if i != -1]
    return html[start : min(ends)]


def admitted_input(s):
    return json.loads(Admission.objects.get(suspension_id=s["id"]).input)


# -- editing arguments ---------------------------------------------------------------------------


def test_each_editable_call_has_a_field_with_its_arguments_and_schema_and_others_have_none(engine, alice):
    s = paused(engine, pending=[refund(), call("c2", "notify_customer", '{"text": "hi"}')])
    html = page(alice, f"/console/approvals/{s['id']}/")
    assert html.count('name="arguments:') == 1
    box = unescape(field_box(html, 0))
    assert 'name="arguments:c1"' in box and '"amount": 900' in box
    assert "amount (required): integer, at most 500" in box and 'currency (required): one of "EUR", "USD"' in box
    assert "No other keys." in box and "<details" in box
    assert 'name="arguments:c2"' not in html


def test_a_valid_edit_admits_the_run_with_the_edited_arguments_and_the_page_shows_both(engine, alice):
    s = paused(engine, pending=[refund(), call("c2", "notify_customer", '{"text": "hi"}')])
    edited = '{\r\n  "amount": 450,\r\n  "currency": "EUR"\r\n}'
    response = decide(alice, s, **{"arguments:c1": edited, "reason": "half now"})
    assert "Approved." in messages_in(response)
    calls = admitted_input(s)["calls"]
    assert [(c["id"], c["arguments"], c["edited"]) for c in calls] == [
        ("c1", edited.replace("\r\n", "\n"), True),
        ("c2", '{"text": "hi"}', False),
    ]
    html = page(alice, f"/console/approvals/{s['id']}/")
    edited_box = html[html.index('data-call-id="c1"') : html.index('data-call-id="c2"')]
    assert "edited</span>" in edited_box and "Approved, as edited" in edited_box and "Asked by the model" in edited_box
    assert "450" in edited_box and "900" in edited_box
    assert "Asked by the model" not in html[html.index('data-call-id="c2"') :]


def test_an_edit_the_schema_refuses_is_shown_next_to_its_field_as_typed_and_nothing_is_written(engine, alice):
    s = paused(engine, pending=[refund("c1"), refund("c2", '{"amount": 20, "currency": "USD"}')])
    bad = '{"amount": 5000, "currency": "GBP"}'
    before = snapshot()
    response = decide(alice, s, follow=False, **{"arguments:c1": bad, "arguments:c2": "{}", "reason": "try"})
    assert response.status_code == 200
    html = response.content.decode()
    first, second = unescape(field_box(html, 0)), unescape(field_box(html, 1))
    assert "<code>$.amount</code>" in first and "5000 is greater than the maximum of 500" in first
    assert "<code>$.currency</code>" in first and "'GBP' is not one of ['EUR', 'USD']" in first
    assert bad in first and 'aria-invalid="true"' in first
    assert "'amount' is a required property" in second  # each call's errors under its own field
    assert "$.currency" not in second
    assert "Nothing was decided" in html and ">try</textarea>" in html
    assert snapshot() == before


def test_text_that_is_not_json_is_a_field_error_not_an_error_page(engine, alice):
    s = paused(engine)
    before = snapshot()
    response = decide(alice, s, follow=False, **{"arguments:c1": '{"amount": 450,'})
    assert response.status_code == 200
    box = unescape(field_box(response.content.decode(), 0))
    assert "This is not valid JSON" in box and '{"amount": 450,</textarea>' in box
    assert snapshot() == before


def test_unchanged_pretty_printed_arguments_agree_with_a_vote_that_sent_none(engine, bob):
    s = paused(engine, approval={"quorum": 2})
    api_voter = client(create_token(scope="acme", roles=["approver"], name="carol")[1])
    first = post(api_voter, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})
    assert first.status_code == 202, first.content
    html = page(bob, f"/console/approvals/{s['id']}/")
    shown = unescape(re.search(r'name="arguments:c1"[^>]*>\n(.*?)</textarea>', html, re.S).group(1))
    assert shown != ASKED and json.loads(shown) == json.loads(ASKED)
    response = decide(bob, s, **{"arguments:c1": shown})
    assert "Approved. Yours was vote 2 of 2." in messages_in(response)
    assert admitted_input(s)["calls"][0]["arguments"] == ASKED  # as asked, byte for byte


# -- answering in words --------------------------------------------------------------------------


def test_an_answer_in_words_admits_the_run_with_it_and_the_decided_page_shows_it(engine, alice):
    s = paused(engine)
    response = decide(alice, s, "respond", response="Refund 450 now, the rest as a voucher.")
    assert "Answered in words." in messages_in(response)
    assert admitted_input(s) == {
        "decision": "respond",
        "response": "Refund 450 now, the rest as a voucher.",
        "approver": "user:alice",
    }
    html = page(alice, f"/console/approvals/{s['id']}/")
    assert 'id="response"' in html and "Refund 450 now, the rest as a voucher." in html
    assert "Answered in words by <strong>user:alice</strong>" in html


def test_an_answer_without_words_is_refused_and_writes_nothing(engine, alice):
    s = paused(engine)
    before = snapshot()
    assert "An answer in words needs words." in messages_in(decide(alice, s, "respond", response="   "))
    assert snapshot() == before


# -- quorum --------------------------------------------------------------------------------------


def test_two_approvers_reach_a_quorum_of_two_and_each_sees_the_votes(engine, alice, bob):
    s = paused(engine, approval={"quorum": 2})
    html = page(alice, f"/console/approvals/{s['id']}/")
    assert "Needs <strong>2 approvers</strong>" in html and "Votes so far: <strong>0 of 2</strong>" in html
    assert "Approve 1 call · vote 1 of 2" in html
    response = decide(alice, s, reason="checked the invoice")
    assert response.redirect_chain[-1][0] == f"/console/approvals/{s['id']}/"
    assert "Your vote is recorded: 1 of 2. The run waits for another approver." in messages_in(response)
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("paused", s["run_revision"])
    again = page(alice, f"/console/approvals/{s['id']}/")
    assert 'id="my-vote"' in again and "checked the invoice" in again
    assert "Votes so far: <strong>1 of 2</strong>" in again and READABLE.search(again[again.index('class="votes"') :])
    theirs = page(bob, f"/console/approvals/{s['id']}/")
    assert 'id="my-vote"' not in theirs and "user:alice</span> approved" in theirs
    assert "Approve 1 call · vote 2 of 2" in theirs
    second = decide(bob, s, reason="agreed")
    assert "Approved. Yours was vote 2 of 2." in messages_in(second)
    assert admitted_input(s)["approvers"] == ["user:alice", "user:bob"]


def test_the_same_approver_voting_again_is_a_replay_with_one_vote_row(engine, alice):
    s = paused(engine, approval={"quorum": 2})
    decide(alice, s, reason="ok")
    before = snapshot()
    response = decide(alice, s, reason="ok")
    assert "You had already voted to approve this" in messages_in(response)
    assert "message-error" not in response.content.decode()
    assert snapshot() == before and ApprovalVote.objects.filter(suspension_id=s["id"]).count() == 1
    changed = decide(alice, s, reason="on second thought")
    assert "your first vote stands" in messages_in(changed)
    assert snapshot() == before


def test_a_vote_on_other_arguments_than_the_first_votes_is_explained_and_the_form_offers_the_first(engine, alice, bob):
    s = paused(engine, approval={"quorum": 2})
    first_edit = '{"amount": 450, "currency": "EUR"}'
    decide(alice, s, **{"arguments:c1": first_edit})
    before = snapshot()
    response = decide(bob, s, **{"arguments:c1": ASKED})
    assert "Your vote differs from the first vote's edits: approve exactly the same arguments or deny." in messages_in(
        response
    )
    assert snapshot() == before
    box = unescape(field_box(page(bob, f"/console/approvals/{s['id']}/"), 0))
    assert f"\n{first_edit}</textarea>" in box and "As the first vote edited them" in box
    assert "Approved." in messages_in(decide(bob, s, **{"arguments:c1": first_edit}))
    assert admitted_input(s)["calls"][0]["arguments"] == first_edit


def test_a_deny_after_one_vote_ends_the_approval_and_the_page_keeps_the_vote(engine, alice, bob):
    s = paused(engine, approval={"quorum": 2})
    decide(alice, s)
    response = decide(bob, s, "deny", reason="not this quarter")
    assert "Denied." in messages_in(response)
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.error) == ("failed", "rejected: not this quarter")
    html = page(alice, f"/console/approvals/{s['id']}/")
    assert "Denied by <strong>user:bob</strong>" in html and "user:alice</span>" in html
    assert "Votes cast: 1 of 2." in html and 'id="approve-form"' not in html


# -- separation of duties ------------------------------------------------------------------------


def test_the_requester_sees_no_forms_and_a_posted_decision_is_refused_with_nothing_written(db):
    erin = member("erin", {"acme": ["approver"]}, is_staff=True)
    _, secret = create_token(scope="acme", roles=["engine"], name="erin-engine", user=erin)
    s = paused(client(secret), approval={"quorum": 1})
    c = Client()
    c.force_login(erin)
    html = page(c, f"/console/approvals/{s['id']}/")
    assert 'id="requester-notice"' in html and "so you cannot decide it" in html
    assert "token:erin-engine" in html
    assert not re.search(r'id="(approve|respond|deny)-form"', html)
    before = snapshot()
    for decision, fields in (("approve", {}), ("deny", {"reason": "no"}), ("respond", {"response": "no"})):
        response = decide(c, s, decision, **fields)
        assert "You asked for this approval, so you cannot decide it: another approver must." in messages_in(response)
    assert snapshot() == before
    assert Approval.objects.get(pk=s["id"]).status == "pending"


# -- the policy in words -------------------------------------------------------------------------


def test_the_page_says_what_each_on_expiry_does_at_the_deadline(engine, alice):
    plain = paused(engine)
    denies = paused(engine, approval={"on_expiry": "deny"})
    escalates = paused(engine, scope="acme/support", approval={"on_expiry": {"escalate": {"extend_seconds": 1800}}})
    assert "the run <strong>expires</strong>" in page(alice, f"/console/approvals/{plain['id']}/")
    assert "the run <strong>is denied</strong>" in page(alice, f"/console/approvals/{denies['id']}/")
    html = page(alice, f"/console/approvals/{escalates['id']}/")
    assert "it <strong>is escalated once</strong>: the deadline moves by 30 min" in html
    assert 'the approvers of <span class="scope">acme</span> are asked' in html
    services.expire_suspensions(now=timezone.now() + timedelta(minutes=11))
    later = page(alice, f"/console/approvals/{escalates['id']}/")
    expiry = later[later.index('id="policy-expiry"') :]
    assert "Already escalated" in expiry and READABLE.search(expiry) and "it expires" in expiry
    assert 'id="approve-form"' in later  # the new deadline has not passed: still decidable


def test_closure_pages_write_times_like_every_console_page(db):
    claimed = started(scope="acme")
    olga = signed_in("olga", {"acme": ["operator"]})
    form = page(olga, f"/console/runs/{claimed.run.id}/close")
    assert re.search(r"<dt>Started</dt><dd><time [^>]+>" + READABLE.pattern, form)
    services.close_run(principal=OPERATOR, run_id=claimed.run.id, request=closure_request(claimed))
    receipt = ClosureReceipt.objects.get()
    html = page(olga, f"/console/runs/{claimed.run.id}/closures/{receipt.suspension_id}/")
    assert re.search(r"<dt>Closed</dt><dd><time [^>]+>" + READABLE.pattern, html)
