"""Approval policies through the API (docs/policies.md): edit with a schema, respond, quorum, separation of duties."""

import hashlib
import json

import pytest

from suspensions.models import Admission, Approval, ApprovalVote, Event, Run, Suspension
from suspensions.tokens import create_token
from tests.helpers import call, client, continuation, member, post, refused, register, snapshot, version

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "maximum": 1000}, "currency": {"enum": ["EUR", "USD"]}},
    "required": ["amount", "currency"],
    "additionalProperties": False,
}
ASKED = '{"amount": 900, "currency": "EUR"}'


@pytest.fixture
def approvers(db, token):
    return {name: client(token("acme", ["approver"], name)) for name in ("alice", "bob", "carol")}


def suspend_body(run, pending=None, **extra):
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": pending or [call("c1", "refund", ASKED, arguments_schema=SCHEMA, editable=True)],
        "continuation": continuation(),
        **extra,
    }
    return body


def paused(engine, pending=None, **extra):
    run = register(engine)
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", suspend_body(run, pending, **extra))
    assert response.status_code == 201, response.content
    return response.json()


def decide(c, s, decision="approve", **body):
    return post(c, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": decision, **body})


def admitted_input(s):
    return json.loads(Admission.objects.get(suspension_id=s["id"]).input)


# -- editing with a schema --------------------------------------------------------------------


def test_an_approver_edits_an_editable_call_and_the_run_is_admitted_with_both_versions_kept(engine, approvers):
    s = paused(engine)
    edited = '{"amount": 450, "currency": "EUR"}'
    response = decide(approvers["alice"], s, calls=[{"id": "c1", "arguments": edited}], reason="half now")
    assert response.status_code == 201, response.content
    calls = admitted_input(s)["calls"]
    assert calls == [
        {
            "id": "c1",
            "name": "refund",
            "arguments": edited,
            "edited": True,
            "original_digest": hashlib.sha256(ASKED.encode()).hexdigest(),
        }
    ]
    body = approvers["alice"].get(f"/api/v1/approvals/{s['id']}").json()
    assert (body["status"], body["calls"][0]["arguments"], body["final_calls"]) == ("approved", ASKED, calls)
    assert body["calls"][0]["editable"] is True and body["calls"][0]["arguments_schema"] == SCHEMA
    voted = Event.objects.filter(run_id=s["run_id"], kind="admitted").count()
    assert voted == 1 and ApprovalVote.objects.get(suspension_id=s["id"]).voter == "token:alice"


def test_edited_arguments_that_break_the_schema_are_422_with_the_call_and_path_of_each_error(engine, approvers):
    s = paused(engine)
    bad = '{"amount": 5000, "currency": "GBP"}'
    body = refused(
        lambda: decide(approvers["alice"], s, calls=[{"id": "c1", "arguments": bad}]), 422, "arguments_invalid"
    )
    assert sorted((e["call_id"], e["path"]) for e in body["errors"]) == [("c1", "$.amount"), ("c1", "$.currency")]
    assert Run.objects.get(pk=s["run_id"]).state == "paused"


def test_a_call_that_is_not_editable_refuses_changed_arguments_but_accepts_them_unchanged(engine, approvers):
    s = paused(engine, pending=[call("c1", "delete_vpc", '{"vpc": "prod"}')])
    body = refused(
        lambda: decide(approvers["alice"], s, calls=[{"id": "c1", "arguments": '{"vpc": "dev"}'}]),
        403,
        "not_editable",
    )
    assert body["call_id"] == "c1"
    same = decide(approvers["alice"], s, calls=[{"id": "c1", "arguments": '{ "vpc" : "prod" }'}])
    assert same.status_code == 201, same.content
    # The same value is no edit: the arguments stay byte for byte as asked, and match their digest.
    decided = admitted_input(s)["calls"][0]
    assert (decided["edited"], decided["arguments"]) == (False, '{"vpc": "prod"}')
    assert decided["original_digest"] == hashlib.sha256(b'{"vpc": "prod"}').hexdigest()


def test_an_edit_naming_an_unknown_or_repeated_call_is_400(engine, approvers):
    s = paused(engine)
    refused(lambda: decide(approvers["alice"], s, calls=[{"id": "c9", "arguments": "{}"}]), 400, "invalid_request")
    twice = [{"id": "c1", "arguments": ASKED}, {"id": "c1", "arguments": ASKED}]
    refused(lambda: decide(approvers["alice"], s, calls=twice), 400, "invalid_request")
    refused(lambda: decide(approvers["alice"], s, calls=[{"id": "c1", "arguments": "{nope"}]), 400, "invalid_request")
    refused(lambda: decide(approvers["alice"], s, "deny", reason="no", calls=[]), 400, "invalid_request")


# -- respond ----------------------------------------------------------------------------------


def test_respond_admits_the_run_with_the_approvers_words_and_keeps_them_on_the_record(engine, approvers):
    s = paused(engine)
    response = decide(approvers["alice"], s, "respond", response="Refund 450 EUR only, the rest as a voucher.")
    assert response.status_code == 201, response.content
    assert admitted_input(s) == {
        "decision": "respond",
        "response": "Refund 450 EUR only, the rest as a voucher.",
        "approver": "token:alice",
    }
    again = decide(approvers["alice"], s, "respond", response="Refund 450 EUR only, the rest as a voucher.")
    assert (again.status_code, again.json()["fresh"]) == (200, False)
    record = approvers["alice"].get(f"/api/v1/approvals/{s['id']}").json()
    assert (record["status"], record["response"]) == ("responded", "Refund 450 EUR only, the rest as a voucher.")
    admission = Admission.objects.get(suspension_id=s["id"])
    started = post(engine, f"/api/v1/admissions/{admission.id}/start", {})
    assert json.loads(started.json()["input"])["decision"] == "respond"


def test_respond_needs_words_and_only_respond_carries_them(engine, approvers):
    s = paused(engine)
    refused(lambda: decide(approvers["alice"], s, "respond", response="  "), 400, "invalid_request")
    refused(lambda: decide(approvers["alice"], s, "respond"), 400, "invalid_request")
    refused(lambda: decide(approvers["alice"], s, "approve", response="hi"), 400, "invalid_request")


# -- quorum -----------------------------------------------------------------------------------


def test_quorum_two_needs_two_distinct_approvers_and_the_second_vote_admits(engine, approvers):
    s = paused(engine, approval={"quorum": 2})
    first = decide(approvers["alice"], s, reason="ok")
    assert first.status_code == 202, first.content
    assert (first.json()["votes"], first.json()["quorum"], first.json()["voters"]) == (1, 2, ["token:alice"])
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("paused", s["run_revision"])
    # The same approver's identical vote again is a replay; it does not count twice.
    again = decide(approvers["alice"], s, reason="ok")
    assert (again.status_code, again.json()["votes"], again.json()["fresh"]) == (200, 1, False)
    refused(lambda: decide(approvers["alice"], s, reason="changed"), 409, "vote_mismatch")
    second = decide(approvers["bob"], s, reason="agreed")
    assert second.status_code == 201, second.content
    decided = admitted_input(s)
    assert (decided["approvers"], decided["approver"]) == (["token:alice", "token:bob"], "token:bob")
    kinds = list(Event.objects.filter(run_id=s["run_id"]).order_by("id").values_list("kind", "revision"))
    assert kinds == [("registered", 1), ("suspended", 2), ("voted", 2), ("voted", 2), ("admitted", 3)]
    record = approvers["carol"].get(f"/api/v1/approvals/{s['id']}").json()
    assert [v["voter"] for v in record["votes"]] == ["token:alice", "token:bob"]
    assert record["policy"] == {"quorum": 2, "exclude_requester": True, "on_expiry": "expire"}
    late = refused(lambda: decide(approvers["carol"], s, reason="me too"), 409, "admission_conflict")
    assert "alice" not in json.dumps(late)


def test_a_later_vote_must_approve_exactly_the_calls_of_the_first(engine, approvers):
    s = paused(engine, approval={"quorum": 2})
    edited = '{"amount": 100, "currency": "EUR"}'
    assert decide(approvers["alice"], s, calls=[{"id": "c1", "arguments": edited}]).status_code == 202
    body = refused(lambda: decide(approvers["bob"], s), 409, "vote_mismatch")
    assert body["first_voter"] == "token:alice"
    second = decide(approvers["bob"], s, calls=[{"id": "c1", "arguments": edited}])
    assert second.status_code == 201, second.content
    assert admitted_input(s)["calls"][0]["arguments"] == edited


def test_a_deny_after_one_vote_ends_the_approval(engine, approvers):
    s = paused(engine, approval={"quorum": 2})
    assert decide(approvers["alice"], s).status_code == 202
    denied = decide(approvers["bob"], s, "deny", reason="not this quarter")
    assert denied.status_code == 201, denied.content
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.error) == ("failed", "rejected: not this quarter")
    refused(lambda: decide(approvers["carol"], s), 409, "not_suspended")
    assert not Admission.objects.filter(suspension_id=s["id"]).exists()


# -- separation of duties ---------------------------------------------------------------------


def test_the_requester_may_not_vote_nor_may_another_token_of_the_same_user(db, token, approvers):
    person = member("erin", {"acme": ["engine", "approver"]}, is_staff=True)
    _, engine_secret = create_token(scope="acme", roles=["engine", "approver"], name="erin-engine", user=person)
    _, second_secret = create_token(scope="acme", roles=["approver"], name="erin-phone", user=person)
    requester = client(engine_secret)
    s = paused(requester, approval={"quorum": 1})
    refused(lambda: decide(requester, s), 403, "separation_of_duties")
    refused(lambda: decide(client(second_secret), s), 403, "separation_of_duties")
    refused(lambda: decide(client(second_secret), s, "deny", reason="x"), 403, "separation_of_duties")
    assert decide(approvers["alice"], s).status_code == 201


def test_without_a_policy_the_requester_may_decide_as_before(db, token):
    both = client(token("acme", ["engine", "approver"], "solo"))
    s = paused(both)
    assert decide(both, s).status_code == 201


# -- bad policies at suspend time: 400, nothing written ---------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"pending": [call("c1", arguments_schema={"type": "nonsense"})]},
        {"pending": [call("c1", arguments_schema=["not", "an", "object"])]},
        {"pending": [call("c1", arguments_schema={"$ref": "https://example.com/schema.json"})]},
        {"pending": [call("c1", editable="yes")]},
        {"approval": {"quorum": 0}},
        {"approval": {"quorum": 6}},
        {"approval": {"quorum": "2"}},
        {"approval": {"on_expiry": {"escalate": {"extend_seconds": -5}}}},
        {"approval": {"on_expiry": {"escalate": {"extend_seconds": 0}}}},
        {"approval": {"on_expiry": {"escalate": {}}}},
        {"approval": {"on_expiry": "later"}},
        {"approval": {"exclude_requester": 1}},
        {"approval": {"unknown": True}},
        {"approval": {"on_expiry": "deny"}, "ttl_seconds": 0},
        {"reason": "external_tool", "approval": {"quorum": 2}},
        {"reason": "external_tool", "pending": [call("c1", editable=True)]},
    ],
)
def test_a_bad_policy_or_schema_is_refused_at_suspend_time_and_nothing_is_written(engine, change):
    run = register(engine)
    body = {**suspend_body(run), **change}
    before = snapshot()
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_request"
    assert snapshot() == before
    assert not Suspension.objects.filter(run_id=run["id"]).exists()


def test_the_policy_is_kept_on_the_approval_record(engine):
    s = paused(
        engine, approval={"quorum": 3, "exclude_requester": False, "on_expiry": {"escalate": {"extend_seconds": 600}}}
    )
    row = Approval.objects.get(suspension_id=s["id"])
    assert (row.quorum, row.exclude_requester, row.on_expiry, row.extend_seconds) == (3, False, "escalate", 600)
    assert row.policy["on_expiry"] == {"escalate": {"extend_seconds": 600}}


def test_a_vote_resending_the_asked_arguments_with_other_spacing_agrees_with_a_plain_vote(engine, approvers):
    s = paused(engine, pending=[call("c1", "delete_vpc", '{"vpc": "prod"}')], approval={"quorum": 2})
    assert decide(approvers["alice"], s).status_code == 202
    second = decide(approvers["bob"], s, calls=[{"id": "c1", "arguments": '{"vpc":"prod"}'}])
    assert second.status_code == 201, second.content


def test_a_version_naming_another_run_is_400_not_a_conflict(engine, approvers):
    s = paused(engine)
    other = register(engine)
    wrong = {**version(s), "run_id": other["id"]}
    for body in (
        {"decision": "approve"},
        {"decision": "deny", "reason": "no"},
        {"decision": "respond", "response": "x"},
    ):
        response = post(approvers["alice"], f"/api/v1/approvals/{s['id']}/decide", {"version": wrong, **body})
        assert response.status_code == 400, response.content
        assert response.json()["errors"] == {"version": {"run_id": ["Mismatch."]}}


def test_a_later_vote_with_the_first_votes_edit_re_indented_agrees_and_the_first_text_is_admitted(engine, approvers):
    s = paused(engine, approval={"quorum": 2})
    edited = '{"amount": 100, "currency": "EUR"}'
    assert decide(approvers["alice"], s, calls=[{"id": "c1", "arguments": edited}]).status_code == 202
    again = decide(approvers["alice"], s, calls=[{"id": "c1", "arguments": '{"currency":"EUR","amount":100}'}])
    assert (again.status_code, again.json()["fresh"]) == (200, False)
    indented = '{\n  "currency": "EUR",\n  "amount": 100\n}'
    second = decide(approvers["bob"], s, calls=[{"id": "c1", "arguments": indented}])
    assert second.status_code == 201, second.content
    assert admitted_input(s)["calls"][0]["arguments"] == edited
