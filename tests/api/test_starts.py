"""Starts (T5), the engines' work list, and recovery through the admission history."""

import hashlib
import json
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest

from suspensions.models import Admission, Event, Run, Suspension
from tests.helpers import call, client, continuation, pause, post, refused, snapshot, version

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")


@pytest.fixture
def bus(db, token):
    return client(token("acme", ["bus"], "bus"))


@pytest.fixture
def approver(db, token):
    return client(token("acme", ["approver"], "alice"))


def admitted(engine, bus, input='{"answer": 42}', **kwargs):
    """An agent-reply pause admitted by the bus; returns (pause, admission receipt)."""
    s = pause(engine, reason="agent_reply", **kwargs)
    body = {"version": version(s), "input": input, "reply_with": "q-1"}
    response = post(bus, f"/api/v1/runs/{s['run_id']}/admissions", body)
    assert response.status_code == 201, response.content
    return s, response.json()["admission"]


def start(c, admission_id):
    return post(c, f"/api/v1/admissions/{admission_id}/start", {})


def work(c, **params):
    response = c.get("/api/v1/admissions", {"state": "admitted", **params})
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def sha256_of(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the work list ----------------------------------------------------------------------


def test_the_work_list_holds_admitted_work_oldest_first(engine, bus, approver):
    _, first = admitted(engine, bus)
    s = pause(engine, reason="approval")
    second = post(approver, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})
    _, third = admitted(engine, bus)
    _, begun = admitted(engine, bus)
    start(engine, begun["id"])
    one_shot = pause(engine)
    one_shot_body = {"version": version(one_shot), "results": [{"call_id": "c1", "content": 1}]}
    assert post(engine, f"/api/v1/runs/{one_shot['run_id']}/resume", one_shot_body).status_code == 201
    assert work(engine) == [first["id"], second.json()["admission"]["id"], third["id"]]


def test_work_list_rows_carry_the_receipt_and_the_state(engine, bus):
    _, receipt = admitted(engine, bus)
    row = engine.get("/api/v1/admissions", {"state": "admitted"}).json()["results"][0]
    assert row == {**receipt, "fresh": False, "state": "admitted"}


def test_the_work_list_shows_nothing_from_another_scope(engine, bus, token):
    admitted(engine, bus)
    assert work(client(token("other", ["engine"], "stranger"))) == []


def test_the_work_list_filters_by_scope(engine, bus):
    admitted(engine, bus)
    _, below = admitted(engine, bus, scope="acme/support")
    assert work(engine, scope="acme/support") == [below["id"]]


# -- the start ----------------------------------------------------------------------------


def test_a_start_is_the_one_answer_that_carries_the_pause_and_the_admitted_input(engine, approver):
    pending = [call("c3", "refund"), call("c1", "notify"), call("c2", "audit")]
    s = pause(engine, reason="approval", pending=pending)
    decided = post(approver, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})
    assert "suspension" not in decided.json()
    admission_id = decided.json()["admission"]["id"]
    response = start(engine, admission_id)
    assert response.status_code == 201, response.content
    body = response.json()
    assert [c["id"] for c in body["suspension"]["pending"]] == ["c3", "c1", "c2"]
    assert body["suspension"]["continuation"] == s["continuation"]
    assert body["input"] == Admission.objects.get(pk=admission_id).input
    assert [c["id"] for c in json.loads(body["input"])["calls"]] == ["c3", "c1", "c2"]
    # A start grants execution without a new revision: the claim's revision is the one to complete with.
    assert (body["run_state"], body["run_revision"], body["start"]["run_revision"]) == ("running", 3, 3)
    assert Admission.objects.get(pk=admission_id).state == "started"
    assert not Suspension.objects.filter(pk=s["id"]).exists()
    assert Event.objects.filter(run_id=s["run_id"], kind="started").count() == 1


def test_the_start_receipt_digest_is_sha256_of_its_fields(engine, bus):
    _, receipt = admitted(engine, bus)
    started = start(engine, receipt["id"]).json()["start"]
    fields = {key: started[key] for key in ["run_id", "suspension_id", "run_revision", "request_digest", "started_at"]}
    assert started["digest"] == sha256_of(fields)
    assert (started["request_digest"], started["valid"]) == (receipt["request_digest"], True)


def test_a_second_start_is_already_started_with_the_receipt_and_no_pause(engine, bus):
    _, receipt = admitted(engine, bus)
    first = start(engine, receipt["id"]).json()
    body = refused(lambda: start(engine, receipt["id"]), 409, "resume_already_started")
    assert body["receipt"] == first["start"]
    assert "suspension" not in body and "input" not in body


def test_a_start_after_the_deadline_is_expired_and_starts_nothing(engine, bus):
    s, receipt = admitted(engine, bus, ttl_seconds=60)
    past = Run.objects.get(pk=s["run_id"]).updated_at - timedelta(seconds=1)
    Suspension.objects.filter(pk=s["id"]).update(expires_at=past, deadline=past)
    refused(lambda: start(engine, receipt["id"]), 410, "suspension_expired")
    assert Admission.objects.get(pk=receipt["id"]).state == "admitted"


def test_a_start_after_the_run_was_cancelled_is_an_invalid_state(engine, bus):
    s, receipt = admitted(engine, bus)
    post(engine, f"/api/v1/runs/{s['run_id']}/cancel", {"revision": receipt["claimed_revision"]})
    refused(lambda: start(engine, receipt["id"]), 409, "invalid_state")


def test_a_one_shot_resume_was_already_started(engine):
    s = pause(engine)
    resumed = post(
        engine,
        f"/api/v1/runs/{s['run_id']}/resume",
        {"version": version(s), "results": [{"call_id": "c1", "content": 1}]},
    )
    body = refused(lambda: start(engine, resumed.json()["admission"]["id"]), 409, "resume_already_started")
    assert body["receipt"] == resumed.json()["start"]


@pytest.mark.parametrize("roles", [["bus"], ["approver"], ["auditor", "operator"]])
def test_a_start_needs_the_engine_role(engine, bus, token, roles):
    _, receipt = admitted(engine, bus)
    refused(lambda: start(client(token("acme", roles, "not-an-engine")), receipt["id"]), 403, "forbidden")


def test_a_start_outside_the_tokens_scope_or_of_an_unknown_admission_is_not_found(engine, bus, token):
    s, receipt = admitted(engine, bus)
    refused(lambda: start(client(token("other", ["engine"], "stranger")), receipt["id"]), 404, "not_found")
    refused(lambda: start(engine, s["id"]), 404, "not_found")


# -- history and recovery --------------------------------------------------------------------


def paused_again(engine, run_id, revision):
    body = {"revision": revision, "reason": "agent_reply", "pending": [call(reply_with="q-1")]}
    response = post(engine, f"/api/v1/runs/{run_id}/suspend", {**body, "continuation": continuation()})
    assert response.status_code == 201, response.content
    return response.json()


def three_admissions(engine, bus):
    """One run paused, admitted and started three times; returns the admission receipts in order."""
    s, receipt = admitted(engine, bus)
    receipts = [receipt]
    for _ in range(2):
        start(engine, receipts[-1]["id"])
        s = paused_again(engine, s["run_id"], receipts[-1]["claimed_revision"])
        body = {"version": version(s), "input": '"again"', "reply_with": "q-1"}
        receipts.append(post(bus, f"/api/v1/runs/{s['run_id']}/admissions", body).json()["admission"])
    return s["run_id"], receipts


def test_the_history_lists_every_admission_of_the_run_oldest_first_through_an_opaque_cursor(engine, bus):
    run_id, receipts = three_admissions(engine, bus)
    admitted(engine, bus)
    seen, url = [], f"/api/v1/runs/{run_id}/admissions?page_size=1"
    for _ in range(3):
        page = bus.get(url).json()
        seen += page["results"]
        url = page["next"]
    assert url is None
    assert [row["id"] for row in seen] == [r["id"] for r in receipts]
    assert [row["state"] for row in seen] == ["done", "done", "admitted"]
    cursor = parse_qs(urlparse(bus.get(f"/api/v1/runs/{run_id}/admissions?page_size=1").json()["next"]).query)
    assert receipts[0]["id"] not in cursor["cursor"][0]


def test_the_latest_admission_is_the_newest_with_its_start_for_recovery(engine, bus):
    run_id, receipts = three_admissions(engine, bus)
    latest = bus.get(f"/api/v1/runs/{run_id}/admissions/latest").json()
    assert latest == {**receipts[-1], "fresh": False, "state": "admitted", "start": None}
    started = start(engine, receipts[-1]["id"]).json()
    latest = engine.get(f"/api/v1/runs/{run_id}/admissions/latest").json()
    assert (latest["id"], latest["state"], latest["start"]) == (receipts[-1]["id"], "started", started["start"])


def test_a_run_without_admissions_has_no_latest(engine):
    s = pause(engine)
    response = engine.get(f"/api/v1/runs/{s['run_id']}/admissions/latest")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


@pytest.mark.parametrize("suffix", ["", "/latest"])
def test_the_history_of_a_run_outside_the_tokens_scope_is_not_found(engine, bus, token, suffix):
    s, _ = admitted(engine, bus)
    stranger = client(token("other", ["engine", "bus"], "stranger"))
    response = stranger.get(f"/api/v1/runs/{s['run_id']}/admissions{suffix}")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_the_history_never_shows_an_input(engine, bus):
    s, _ = admitted(engine, bus, input='{"secret": "pineapple"}')
    rows = engine.get(f"/api/v1/runs/{s['run_id']}/admissions").json()["results"]
    latest = engine.get(f"/api/v1/runs/{s['run_id']}/admissions/latest").json()
    assert "pineapple" not in json.dumps([rows, latest])


@pytest.mark.parametrize(
    "body, content_type",
    [
        ('{"x": 1}', "application/json"),
        ("not json", "application/json"),
        ("[]", "application/json"),
        ("x=1", "application/x-www-form-urlencoded"),
    ],
)
def test_a_start_with_a_body_other_than_nothing_or_an_empty_object_is_refused_and_starts_nothing(
    engine, approver, body, content_type
):
    s = pause(engine, reason="approval")
    decided = post(approver, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})
    admission_id = decided.json()["admission"]["id"]
    before = snapshot()
    response = engine.post(f"/api/v1/admissions/{admission_id}/start", data=body, content_type=content_type)
    assert response.status_code == 400, response.content
    assert snapshot() == before
    assert engine.post(f"/api/v1/admissions/{admission_id}/start").status_code == 201
