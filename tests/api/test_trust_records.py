"""Trust boundaries (docs/decisions.md, "Trust boundaries"): the kept approval record, ordered ids, cursors and unknown
API paths."""

import json
import threading
import uuid

import pytest

from suspensions import ids
from suspensions.models import Admission, Approval
from tests.helpers import call, client, continuation, envelope, member, pause, post, problem, refused, resume, version

ARGS = '{"amount": 900, "to": "acct-7"}'


@pytest.fixture
def alice(db, token):
    return client(token("acme", ["approver"], "alice"))


def approval(engine, **kwargs):
    return pause(engine, reason="approval", pending=[call("c1", "refund", ARGS), call("c2", "notify", "{}")], **kwargs)


def decide(c, s, decision="approve", reason=None):
    body = {"version": version(s), "decision": decision, **({"reason": reason} if reason else {})}
    return post(c, f"/api/v1/approvals/{s['id']}/decide", body)


# -- a decided approval keeps what was decided (docs/policies.md, "Reading an approval") -------


def test_a_denied_approval_still_shows_the_calls_it_refused_by_whom_for_which_agent(engine, alice):
    s = approval(engine)
    assert decide(alice, s, "deny", "over the limit").status_code == 201
    body = alice.get(f"/api/v1/approvals/{s['id']}").json()
    assert body["status"] == "denied"
    unlocked = {"editable": False, "arguments_schema": None}
    assert body["calls"] == [
        {"id": "c1", "name": "refund", "arguments": ARGS, **unlocked},
        {"id": "c2", "name": "notify", "arguments": "{}", **unlocked},
    ]
    assert (body["agent_id"], body["decided_by"], body["note"]) == ("agent-1", "token:alice", "over the limit")
    assert (body["requested_by"], body["run_state"], body["version"]) == ("token:engine", "failed", None)


def test_an_approved_and_started_approval_still_shows_its_calls_and_admission(engine, alice):
    s = approval(engine)
    admission = decide(alice, s).json()["admission"]
    assert post(engine, f"/api/v1/admissions/{admission['id']}/start", {}).status_code == 201
    body = alice.get(f"/api/v1/approvals/{s['id']}").json()
    assert (body["status"], body["admission_id"], body["decided_by"]) == ("approved", admission["id"], "token:alice")
    assert [c["arguments"] for c in body["calls"]] == [ARGS, "{}"]


def test_a_pending_approval_answers_the_version_to_decide_with(engine, alice):
    s = approval(engine, ttl_seconds=600)
    body = alice.get(f"/api/v1/approvals/{s['id']}").json()
    assert (body["status"], body["version"], body["decided_by"]) == ("pending", version(s), "")
    assert body["expires_at"] == s["expires_at"]


def test_an_auditor_reads_an_approval_record(engine, token):
    s = approval(engine)
    auditor = client(token("acme", ["auditor"], "auditor"))
    assert auditor.get(f"/api/v1/approvals/{s['id']}").json()["calls"][0]["name"] == "refund"


def test_an_approval_record_needs_the_approver_or_auditor_role(engine):
    s = approval(engine)
    problem(engine.get(f"/api/v1/approvals/{s['id']}"), 403, "forbidden")


def test_an_approval_record_of_another_scope_is_not_found(engine, token):
    s = approval(engine)
    outsider = client(token("globex", ["approver", "auditor"], "outsider"))
    problem(outsider.get(f"/api/v1/approvals/{s['id']}"), 404, "not_found")


def test_the_console_shows_the_calls_a_denied_approval_refused(engine, alice, client):
    s = approval(engine)
    assert decide(alice, s, "deny", "over the limit").status_code == 201
    member("carol", {"acme": ["auditor"]}, is_staff=True)
    client.login(username="carol", password="pw")
    page = client.get(f"/console/approvals/{s['id']}/").content.decode()
    assert "refund" in page and "notify" in page and "acct-7" in page
    assert "agent-1 asked for approval" in page


def test_an_approval_record_keeps_the_calls_byte_for_byte(engine):
    s = approval(engine)
    assert json.loads(Approval.objects.get(pk=s["id"]).pending)[0]["arguments"] == ARGS


# -- ids and "the latest admission" ---------------------------------------------------------------


def test_ids_minted_in_a_tight_loop_are_strictly_increasing():
    minted = [ids.uuid7() for _ in range(20_000)]
    assert all(a < b for a, b in zip(minted, minted[1:], strict=False))
    assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in minted[:100])


def test_ids_minted_by_racing_threads_are_distinct_and_each_thread_sees_them_increase():
    minted: dict[int, list[uuid.UUID]] = {}

    def mint(n):
        minted[n] = [ids.uuid7() for _ in range(5_000)]

    threads = [threading.Thread(target=mint, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [u for batch in minted.values() for u in batch]
    assert len(set(every)) == len(every)
    assert all(all(a < b for a, b in zip(b, b[1:], strict=False)) for b in minted.values())


def test_the_latest_admission_does_not_depend_on_id_order(engine):
    first = pause(engine)
    assert resume(engine, first).status_code == 201
    body = {"revision": first["run_revision"] + 1, "reason": "external_tool", "pending": [call()]}
    second_run = post(engine, f"/api/v1/runs/{first['run_id']}/suspend", {**body, "continuation": continuation()})
    assert second_run.status_code == 201, second_run.content
    second = second_run.json()
    assert resume(engine, second).status_code == 201
    # Two processes may mint ids in one millisecond in either order: make the later pause's id the smaller.
    Admission.objects.filter(suspension_id=second["id"]).update(suspension_id=uuid.UUID(int=1))
    latest = engine.get(f"/api/v1/runs/{first['run_id']}/admissions/latest").json()
    assert latest["suspension_id"] == str(uuid.UUID(int=1))


# -- cursors and unknown paths (docs/decisions.md, "Trust boundaries") -------------------------


@pytest.mark.parametrize("cursor", ["garbage", "cD0yMDI2", "cj0xJnA9bm90LWEtdXVpZA==", "bm90LWEtY3Vyc29y", "eD0x"])
def test_a_tampered_cursor_is_a_bad_request(engine, cursor):
    pause(engine)
    refused(lambda: engine.get("/api/v1/runs", {"cursor": cursor}), 400, "invalid_request")


@pytest.mark.parametrize("path", ["/api/v1/runs/not-a-uuid", "/api/v1/nowhere", "/api/v2/runs", "/api/"])
def test_an_unknown_api_path_is_a_problem_404_with_debug_on_too(engine, settings, path):
    settings.DEBUG = True
    problem(engine.get(path), 404, "not_found")
    problem(post(engine, path, {}), 404, "not_found")


def test_an_anonymous_post_to_an_unknown_api_path_is_a_404_not_a_csrf_page(db):
    from rest_framework.test import APIClient

    problem(APIClient(enforce_csrf_checks=True).post("/api/v1/nowhere", {}, format="json"), 404, "not_found")


def test_an_approval_flow_wait_shows_no_decide_form_in_the_console(engine, client):
    body = {
        "envelope": envelope(),
        "snapshot": {"step": 1},
        "reason": "approval",
        "decision_token": "decision-token-Zq8xv3Lw",
    }
    parked = post(engine, "/api/v1/flow-waits", body)
    assert parked.status_code == 201, parked.content
    member("dave", {"acme": ["approver"]}, is_staff=True)
    client.login(username="dave", password="pw")
    page = client.get(f"/console/approvals/{parked.json()['suspension_id']}/").content.decode()
    assert "answered through the flow" in page
    assert 'id="approve-form"' not in page and 'id="deny-form"' not in page


@pytest.mark.parametrize("param", ["created_after", "updated_before"])
def test_a_list_filter_time_out_of_range_in_utc_is_a_bad_request(engine, param):
    pause(engine)
    body = refused(lambda: engine.get("/api/v1/runs", {param: "0001-01-01T00:00:00+01:00"}), 400, "invalid_request")
    assert param in body["errors"]


def test_the_cursors_the_api_issues_still_page(engine):
    for _ in range(3):
        pause(engine)
    first = engine.get("/api/v1/runs", {"page_size": 2}).json()
    second = engine.get(first["next"]).json()
    assert len(first["results"]) == 2 and len(second["results"]) == 1
    assert engine.get(second["previous"]).json()["results"] == first["results"]


def test_a_start_of_admitted_work_answers_the_admission_as_not_fresh(engine, alice):
    s = approval(engine)
    admission = decide(alice, s).json()["admission"]
    assert admission["fresh"] is True
    started = post(engine, f"/api/v1/admissions/{admission['id']}/start", {}).json()
    assert (started["fresh"], started["admission"]["fresh"]) == (True, False)
