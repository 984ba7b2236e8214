"""A list of decisions in one request (docs/api.md, "`POST /approvals/decide`: a list of decisions"): each item
answers what its single decide would, a retry replays, a malformed list is one 400 that decides nothing."""

import uuid

import pytest

from suspensions.models import Admission, Approval, Run
from tests.helpers import client, pause, post, problem, refused, snapshot, version

pytestmark = pytest.mark.usefixtures("chains_intact")

BULK = "/api/v1/approvals/decide"


@pytest.fixture
def alice(db, token):
    return client(token("acme", ["approver"], "alice"))


def approval(engine, **kwargs):
    return pause(engine, reason="approval", **kwargs)


def item(s, decision="approve", **fields):
    return {"approval_id": s["id"], "version": version(s), "decision": decision, **fields}


def single(c, s, decision="approve", **fields):
    return post(c, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": decision, **fields})


def bulk(c, *items):
    return post(c, BULK, {"items": list(items)})


def replayed(body):
    """A decision's body as its replay answers it: `fresh` false, the admission's too."""
    out = {**body, "fresh": False}
    if "admission" in body:
        out["admission"] = {**body["admission"], "fresh": False}
    return out


def results(response):
    assert response.status_code == 200, response.content[:2000]
    return response.json()["results"]


def test_each_item_is_decided_in_order_and_answers_what_its_single_decide_answers(engine, alice):
    first, second, third = approval(engine), approval(engine), approval(engine)
    out = results(bulk(alice, item(first), item(second, "deny", reason="not today"), item(third, reason="fine")))
    assert [(r["approval_id"], r["status"]) for r in out] == [(x["id"], 201) for x in (first, second, third)]
    assert out[0]["body"]["admission"]["source"] == "approval" and out[0]["body"]["fresh"] is True
    assert out[1]["body"] == {
        "decision": "deny",
        "run_id": second["run_id"],
        "suspension_id": second["id"],
        "run_state": "failed",
        "run_revision": 3,
        "reason": "not today",
        "fresh": True,
    }
    assert Run.objects.get(pk=first["run_id"]).state == "running"
    assert Run.objects.get(pk=second["run_id"]).error == "rejected: not today"
    assert Approval.objects.get(pk=third["id"]).note == "fine"
    # What the single decide answers for the same decision again: the same bodies, as replays.
    again = single(alice, third, reason="fine")
    assert (again.status_code, again.json()) == (200, replayed(out[2]["body"]))


def test_the_same_list_again_replays_what_was_done_and_decides_nothing_twice(engine, alice):
    a, b = approval(engine), approval(engine)
    items = [item(a, reason="ok"), item(b, "deny", reason="no")]
    first = results(bulk(alice, *items))
    before = snapshot()
    second = results(bulk(alice, *items))
    assert snapshot() == before
    assert [r["status"] for r in second] == [200, 200]
    assert [r["body"] for r in second] == [replayed(r["body"]) for r in first]
    assert Admission.objects.filter(suspension_id=a["id"]).count() == 1


def test_a_refused_item_carries_its_problem_and_the_others_are_still_decided(engine, alice, token):
    decided, fresh, stale = approval(engine), approval(engine), approval(engine)
    bob = client(token("acme", ["approver"], "bob"))
    assert single(bob, decided).status_code == 201
    old = {**item(stale), "version": {**version(stale), "run_revision": 1}}
    out = results(bulk(alice, item(decided), item(fresh), old))
    assert [r["status"] for r in out] == [409, 201, 409]
    assert out[0]["body"]["code"] in {"not_suspended", "admission_conflict"}
    assert out[0]["body"] == single(alice, decided).json()
    assert out[2]["body"]["code"] == "version_conflict"
    assert {"type", "title", "status", "detail", "code"} <= out[2]["body"].keys()
    assert Approval.objects.get(pk=fresh["id"]).status == "approved"
    assert Approval.objects.get(pk=stale["id"]).status == "pending"


def test_an_approval_outside_the_callers_scopes_is_the_same_404_as_a_single_decide(engine, alice, token):
    other = client(token("other", ["engine"], "other-engine"))
    elsewhere, mine = approval(other), approval(engine)
    out = results(bulk(alice, item(elsewhere), item(mine)))
    alone = single(alice, elsewhere)
    assert (out[0]["status"], out[0]["body"]) == (404, problem(alone, 404, "not_found"))
    assert out[1]["status"] == 201
    assert Approval.objects.get(pk=elsewhere["id"]).status == "pending"


def test_a_role_missing_is_the_single_decides_403_per_item(engine, token):
    auditor = client(token("acme", ["auditor"], "auditor"))
    s = approval(engine)
    out = results(bulk(auditor, item(s)))
    assert (out[0]["status"], out[0]["body"]) == (403, problem(single(auditor, s), 403, "forbidden"))


@pytest.mark.parametrize(
    "body, path",
    [
        ([], "non_field_errors"),
        ({}, "items"),
        ({"items": []}, "items"),
        ({"items": "all"}, "items"),
        ({"items": [], "also": 1}, "also"),
        ({"items": ["approve"]}, "items[0]"),
    ],
)
def test_a_body_that_is_not_a_list_of_one_to_a_hundred_objects_is_one_400(engine, alice, body, path):
    approval(engine)
    found = refused(lambda: post(alice, BULK, body), 400, "invalid_request")
    assert path in found["errors"], found


def test_one_malformed_item_is_one_400_naming_its_path_and_nothing_is_decided(engine, alice):
    good, bad, missing = approval(engine), approval(engine), approval(engine)
    items = [
        item(good),
        item(bad, "maybe"),
        {k: v for k, v in item(missing).items() if k != "version"},
        item(good, "deny"),
        {**item(good), "approval_id": "not-a-uuid"},
        {**item(good), "calls": "x", "decision": "deny", "reason": "r"},
    ]
    found = refused(lambda: bulk(alice, *items), 400, "invalid_request")
    assert found["errors"] == {
        "items[1].decision": ["Input should be 'approve', 'deny' or 'respond'"],
        "items[2].version": ["This field is required."],
        "items[3].reason": ["A denial needs a reason."],
        "items[4].approval_id": ["Must be a valid UUID."],
        "items[5].calls": ["Input should be a valid list"],
    }
    assert found["detail"].startswith("items[1].decision: ")
    assert Approval.objects.filter(status="pending").count() == 3


def test_a_list_naming_an_approval_twice_or_a_version_of_another_is_one_400(engine, alice):
    a, b = approval(engine), approval(engine)
    crossed = {**item(a), "version": version(b)}
    found = refused(lambda: bulk(alice, item(b), item(b, reason="again"), crossed), 400, "invalid_request")
    assert found["errors"] == {
        "items[1].approval_id": ["The same approval as items[0]: decide it once."],
        "items[2].version.suspension_id": ["Must be the item's approval_id."],
    }


def test_a_hundred_items_are_accepted_and_a_hundred_and_one_are_refused(engine, alice):
    s = approval(engine)
    many = [{**item(s), "approval_id": str(uuid.uuid4())} for _ in range(101)]
    found = refused(lambda: bulk(alice, *many), 400, "invalid_request")
    assert list(found["errors"]) == ["items"]
    hundred = [approval(engine) for _ in range(100)]
    out = results(bulk(alice, *[item(x) for x in hundred]))
    assert [r["status"] for r in out] == [201] * 100
    assert [r["approval_id"] for r in out] == [x["id"] for x in hundred]


def test_a_quorum_vote_in_a_list_answers_the_single_decides_202(engine, token):
    s = pause(engine, reason="approval")
    Approval.objects.filter(pk=s["id"]).update(quorum=2)
    first = client(token("acme", ["approver"], "first"))
    out = results(bulk(first, item(s)))
    assert out[0]["status"] == 202 and out[0]["body"]["votes"] == 1
    again = results(bulk(first, item(s)))
    assert again[0]["status"] == 200 and again[0]["body"] == {**out[0]["body"], "fresh": False}
