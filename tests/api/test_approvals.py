"""Approvals: the inbox, approve (T4 by an approver), deny (T6), replays and conflicts."""

import hashlib
import json
from datetime import timedelta

import pytest

from suspensions import digests
from suspensions.models import Admission, Approval, Event, Run, Suspension
from tests.helpers import call, client, continuation, pause, post, problem, refused, snapshot, version

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")


@pytest.fixture
def alice(db, token):
    return client(token("acme", ["approver"], "alice"))


@pytest.fixture
def bob(db, token):
    return client(token("acme", ["approver"], "bob"))


def approval(engine, **kwargs):
    return pause(engine, reason="approval", **kwargs)


def decide(c, s, decision="approve", reason=None):
    body = {"version": version(s), "decision": decision}
    if reason is not None:
        body["reason"] = reason
    return post(c, f"/api/v1/approvals/{s['id']}/decide", body)


def inbox(c, **params):
    response = c.get("/api/v1/approvals", params)
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def expire(s):
    # Test setup: move the deadline into the past as the clock would have.
    past = Run.objects.get(pk=s["run_id"]).updated_at - timedelta(seconds=1)
    Suspension.objects.filter(pk=s["id"]).update(expires_at=past, deadline=past)


def without_fresh(receipt):
    return {key: value for key, value in receipt.items() if key != "fresh"}


# -- the inbox -------------------------------------------------------------------------


def test_an_approval_pause_opens_a_pending_approval_request_with_it(engine):
    s = approval(engine)
    row = Approval.objects.get(suspension_id=s["id"])
    assert (str(row.run_id), row.scope, row.status, row.decided_by) == (s["run_id"], "acme", "pending", "")


def test_other_pauses_open_no_approval_request(engine):
    pause(engine)
    pause(engine, reason="agent_reply")
    assert Approval.objects.count() == 0


def test_the_inbox_lists_pending_approvals_in_scope_soonest_deadline_first(engine, alice, token):
    late = approval(engine, ttl_seconds=600)
    never = approval(engine, ttl_seconds=0)
    soon = approval(engine, ttl_seconds=60)
    below = approval(engine, scope="acme/support", ttl_seconds=300)
    pause(engine, ttl_seconds=1)
    decided = approval(engine, ttl_seconds=30)
    assert decide(alice, decided).status_code == 201
    elsewhere = client(token("other", ["engine"], "other-engine"))
    approval(elsewhere, ttl_seconds=10)
    assert inbox(alice) == [soon["id"], below["id"], late["id"], never["id"]]


def test_the_inbox_filters_by_agent_tool_and_scope(engine, alice):
    refund = approval(engine, agent_id="refunder", pending=[call("c1", "refund"), call("c2", "notify")])
    mail = approval(engine, agent_id="mailer", pending=[call("c1", "send_mail")], scope="acme/support")
    assert inbox(alice, agent_id="refunder") == [refund["id"]]
    assert inbox(alice, tool="notify") == [refund["id"]]
    assert inbox(alice, tool="notif") == []
    assert inbox(alice, scope="acme/support") == [mail["id"]]


def test_the_inbox_filters_by_created_and_expiring_ranges(engine, alice):
    soon = approval(engine, ttl_seconds=60)
    late = approval(engine, ttl_seconds=3600)
    assert inbox(alice, expires_before=late["expires_at"]) == [soon["id"]]
    assert inbox(alice, expires_after=late["expires_at"]) == [late["id"]]
    assert inbox(alice, expiring_within=600) == [soon["id"]]
    assert inbox(alice, created_after=late["created_at"]) == [late["id"]]
    assert inbox(alice, created_before=late["created_at"]) == [soon["id"]]


def test_an_auditor_reads_the_inbox(engine, token):
    s = approval(engine)
    assert inbox(client(token("acme", ["auditor"], "auditor")))[0] == s["id"]


def test_the_inbox_needs_the_approver_or_auditor_role(engine):
    approval(engine)
    problem(engine.get("/api/v1/approvals"), 403, "forbidden")


def test_the_inbox_shows_nothing_from_another_scope(engine, token):
    approval(engine)
    assert inbox(client(token("other", ["approver"], "stranger"))) == []


# -- approve ---------------------------------------------------------------------------


def test_approve_admits_the_decision_and_leaves_the_pause_for_a_start(engine, alice):
    s = approval(engine, pending=[call("c1"), call("c2", "notify")])
    response = decide(alice, s, reason="fine by me")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["run_state"], body["run_revision"], body["fresh"]) == ("running", 3, True)
    assert (body["admission"]["source"], body["admission"]["actor"]) == ("approval", "token:alice")
    assert body["admission"]["claimed_revision"] == 3
    # An admission grants no execution: no pause, no input in its answer.
    assert "suspension" not in body and "input" not in body
    admission = Admission.objects.get(run_id=s["run_id"])
    asked = '{"amount": 900}'
    unedited = {"arguments": asked, "edited": False, "original_digest": hashlib.sha256(asked.encode()).hexdigest()}
    assert json.loads(admission.input) == {
        "decision": "approve",
        "calls": [{"id": "c1", "name": "refund", **unedited}, {"id": "c2", "name": "notify", **unedited}],
        "note": "fine by me",
        "approver": "token:alice",
        "approvers": ["token:alice"],
    }
    assert admission.state == "admitted"
    assert Suspension.objects.filter(pk=s["id"]).exists()
    row = Approval.objects.get(suspension_id=s["id"])
    assert (row.status, row.decided_by, row.note) == ("approved", "token:alice", "fine by me")
    assert Event.objects.filter(run_id=s["run_id"], kind="admitted", actor="token:alice").exists()


def test_an_approved_pause_leaves_the_inbox(engine, alice):
    s = approval(engine)
    decide(alice, s)
    assert inbox(alice) == []


def test_the_actor_comes_from_the_token_never_from_the_body(engine, alice):
    s = approval(engine)
    body = {"version": version(s), "decision": "approve", "approver": "mallory"}
    refused(lambda: post(alice, f"/api/v1/approvals/{s['id']}/decide", body), 400, "invalid_request")
    assert decide(alice, s).json()["admission"]["actor"] == "token:alice"


def test_the_same_approvers_identical_approval_again_is_a_replay(engine, alice):
    s = approval(engine)
    first = decide(alice, s, reason="ok").json()
    before = snapshot()
    again = decide(alice, s, reason="ok")
    assert again.status_code == 200, again.content
    assert again.json()["fresh"] is False
    assert without_fresh(again.json()["admission"]) == without_fresh(first["admission"])
    assert again.json()["admission"]["fresh"] is False
    assert snapshot() == before


def test_a_second_approvers_approval_is_an_admission_conflict_that_shows_no_input(engine, alice, bob):
    s = approval(engine)
    first = decide(alice, s, reason="secret note").json()
    body = refused(lambda: decide(bob, s, reason="secret note"), 409, "admission_conflict")
    assert body["admitted_digest"] == first["admission"]["request_digest"]
    assert body["request_digest"] != body["admitted_digest"]
    assert "secret note" not in json.dumps(body) and "alice" not in json.dumps(body)


def test_the_same_approver_approving_with_another_note_is_an_admission_conflict(engine, alice):
    s = approval(engine)
    decide(alice, s, reason="one")
    refused(lambda: decide(alice, s, reason="two"), 409, "admission_conflict")


def test_a_denial_after_an_approval_is_not_suspended(engine, alice, bob):
    s = approval(engine)
    decide(alice, s)
    refused(lambda: decide(bob, s, "deny", "no"), 409, "not_suspended")
    refused(lambda: decide(alice, s, "deny", "changed my mind"), 409, "not_suspended")


def test_a_stale_page_can_never_decide_a_later_pause(engine, alice, bob):
    s = approval(engine)
    decide(alice, s)
    admission = Admission.objects.get(run_id=s["run_id"])
    assert post(engine, f"/api/v1/admissions/{admission.id}/start", {}).status_code == 201
    again = {"revision": 3, "reason": "approval", "pending": [call("c9")], "continuation": continuation()}
    assert post(engine, f"/api/v1/runs/{s['run_id']}/suspend", again).status_code == 201
    refused(lambda: decide(bob, s), 409, "version_conflict")
    refused(lambda: decide(bob, s, "deny", "old page"), 409, "not_suspended")
    assert Approval.objects.filter(run_id=s["run_id"], status="pending").count() == 1


# -- deny ------------------------------------------------------------------------------


def test_deny_fails_the_run_deletes_the_pause_and_resolves_the_approval(engine, alice):
    s = approval(engine)
    response = decide(alice, s, "deny", "too much money")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["decision"], body["run_state"], body["run_revision"], body["fresh"]) == ("deny", "failed", 3, True)
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision, run.error) == ("failed", 3, "rejected: too much money")
    assert not Suspension.objects.filter(pk=s["id"]).exists()
    assert not Admission.objects.filter(run_id=s["run_id"]).exists()
    row = Approval.objects.get(suspension_id=s["id"])
    assert (row.status, row.decided_by, row.note) == ("denied", "token:alice", "too much money")
    assert Event.objects.filter(run_id=s["run_id"], kind="denied", actor="token:alice").exists()


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_a_denial_needs_a_reason(engine, alice, reason):
    s = approval(engine)
    body = refused(lambda: decide(alice, s, "deny", reason), 400, "invalid_request")
    assert "reason" in body["errors"]


def test_the_same_approvers_identical_denial_again_is_a_replay(engine, alice):
    s = approval(engine)
    decide(alice, s, "deny", "no")
    before = snapshot()
    again = decide(alice, s, "deny", "no")
    assert (again.status_code, again.json()["fresh"], again.json()["run_state"]) == (200, False, "failed")
    assert snapshot() == before


@pytest.mark.parametrize(
    "who, decision, reason",
    [("bob", "deny", "no"), ("alice", "deny", "another reason"), ("bob", "approve", None), ("alice", "approve", None)],
)
def test_any_other_decision_after_a_denial_is_not_suspended(engine, alice, bob, who, decision, reason):
    s = approval(engine)
    decide(alice, s, "deny", "no")
    refused(lambda: decide({"alice": alice, "bob": bob}[who], s, decision, reason), 409, "not_suspended")


# -- deadline, shape and reach -----------------------------------------------------------


@pytest.mark.parametrize("decision, reason", [("approve", None), ("deny", "late")])
def test_deciding_an_expired_pause_is_expired_and_leaves_it_to_the_sweeper(engine, alice, decision, reason):
    s = approval(engine, ttl_seconds=60)
    expire(s)
    refused(lambda: decide(alice, s, decision, reason), 410, "suspension_expired")
    assert Run.objects.get(pk=s["run_id"]).state == "paused"
    assert Approval.objects.get(suspension_id=s["id"]).status == "pending"


def test_a_version_for_another_pause_than_the_path_is_refused(engine, alice):
    s = approval(engine)
    other = approval(engine)
    body = {"version": version(other), "decision": "approve"}
    refused(lambda: post(alice, f"/api/v1/approvals/{s['id']}/decide", body), 400, "invalid_request")


def test_a_stale_revision_is_a_version_conflict(engine, alice):
    s = approval(engine)
    body = {"version": {**version(s), "run_revision": 1}, "decision": "approve"}
    refused(lambda: post(alice, f"/api/v1/approvals/{s['id']}/decide", body), 409, "version_conflict")


def test_deciding_outside_the_tokens_scope_is_not_found(engine, token):
    s = approval(engine)
    stranger = client(token("other", ["approver"], "stranger"))
    refused(lambda: decide(stranger, s), 404, "not_found")
    refused(lambda: decide(stranger, s, "deny", "no"), 404, "not_found")


@pytest.mark.parametrize("roles", [["engine"], ["auditor"], ["bus", "operator"]])
def test_deciding_needs_the_approver_role(engine, token, roles):
    s = approval(engine)
    refused(lambda: decide(client(token("acme", roles, "no-approver")), s), 403, "forbidden")


# -- end to end --------------------------------------------------------------------------


def test_approve_then_start_then_complete_runs_the_approved_calls_once(engine, alice):
    s = approval(engine, pending=[call("c1"), call("c2", "notify")])
    admitted = decide(alice, s, reason="go").json()["admission"]
    work = engine.get("/api/v1/admissions", {"state": "admitted"}).json()["results"]
    assert [row["id"] for row in work] == [admitted["id"]]
    started = post(engine, f"/api/v1/admissions/{admitted['id']}/start", {})
    assert started.status_code == 201, started.content
    body = started.json()
    assert [c["id"] for c in body["suspension"]["pending"]] == ["c1", "c2"]
    assert body["suspension"]["continuation"]["step_index"] == 2
    decision = json.loads(body["input"])
    assert (decision["decision"], decision["approver"]) == ("approve", "token:alice")
    assert [(c["id"], c["arguments"], c["edited"]) for c in decision["calls"]] == [
        ("c1", '{"amount": 900}', False),
        ("c2", '{"amount": 900}', False),
    ]
    done = post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": admitted["claimed_revision"]})
    assert (done.status_code, done.json()["state"]) == (200, "completed")
    assert Admission.objects.get(pk=admitted["id"]).state == "done"
    assert engine.get("/api/v1/admissions", {"state": "admitted"}).json()["results"] == []


def test_the_identical_approval_after_the_run_completed_replays_the_original_receipt(engine, alice):
    s = approval(engine)
    first = decide(alice, s).json()
    post(engine, f"/api/v1/admissions/{first['admission']['id']}/start", {})
    post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": first["admission"]["claimed_revision"]})
    again = decide(alice, s)
    assert (again.status_code, again.json()["run_state"]) == (200, "completed")
    assert without_fresh(again.json()["admission"]) == without_fresh(first["admission"])
    assert "suspension" not in again.json() and "input" not in again.json()


def test_the_approval_input_is_canonical_json(engine, alice):
    s = approval(engine)
    decide(alice, s, reason="é")
    text = Admission.objects.get(run_id=s["run_id"]).input
    assert text.encode() == digests.canonical(json.loads(text))
