"""Correlation-keyed waits over HTTP (docs/api.md, "7.7 Flow waits (correlation-keyed)"): park, gate, resume, start, and
every refusal."""

import hashlib
import hmac
import json
import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from suspensions.models import Admission, Approval, Event, FlowWait, Run, Suspension
from tests.helpers import client, envelope, post, refused
from tests.race import race

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")

CANONICAL = "acme:slack:C1:conv-9:U7"
TOKEN = "decision-token-Zq8xv3Lw"
OTHER_NONCE = "fedcba9876543210fedcba9876543210"
SNAPSHOT = {"node": "await-7", "state": {"z": 1, "a": [1.5, None, True, {"b": 'ü "q" ☃'}]}, "vars": {}}
RACERS = 4


def park_body(reason="agent_reply", token=None, **overrides):
    body = {"envelope": envelope(**overrides), "snapshot": SNAPSHOT, "reason": reason}
    if reason == "approval" and token is None:
        token = TOKEN  # an approval wait must carry one (docs/decisions.md, "Trust boundaries")
    if token is not None:
        body["decision_token"] = token
    return body


def park(c, reason="agent_reply", token=None, **overrides):
    response = post(c, "/api/v1/flow-waits", park_body(reason, token, **overrides))
    assert response.status_code == 201, response.content
    return response.json()


def resume(c, correlation_id, output=None, token=None, tenant="acme"):
    body = {"tenant": tenant, "env": "prod", "correlation_id": correlation_id, "output": output or {"answer": 42}}
    if token is not None:
        body["decision_token"] = token
    return post(c, "/api/v1/dispatch/resume", body)


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def nonce_of(correlation_id):
    return correlation_id.rsplit("::n=", 1)[1]


def all_event_data():
    return json.dumps(list(Event.objects.values_list("data", flat=True)))


@pytest.fixture
def bus(db, token):
    return client(token("acme", ["bus"], "bus"))


def test_a_park_answers_the_correlation_id_key_and_user_id_of_its_envelope(engine):
    parked = park(engine, thread="t1", reply_to="r1")
    nonce = nonce_of(parked["correlation_id"])
    assert re.fullmatch(r"[0-9a-f]{32}", nonce)
    assert parked["correlation_id"] == f"{CANONICAL}::pack=support::flow=refund::thread=t1::reply=r1::n={nonce}"
    assert parked["store_key"] == f"{CANONICAL}::pack=support::" + sha("conv-9\nt1\nr1\n")
    assert parked["user_id"] == "sess" + hashlib.sha256(f"{CANONICAL}::pack=support".encode()).digest()[:8].hex()
    assert parked["scope"] == "acme/prod"
    shown = engine.get(f"/api/v1/suspensions/{parked['suspension_id']}").json()
    assert shown["correlation_id"] == parked["correlation_id"]
    assert shown["pending"][0]["reply_with"] == parked["store_key"]


def test_a_session_hint_leads_the_correlation_id_and_the_key(engine):
    hint = "acme:slack:C1:conv-9:alias-3"
    parked = park(engine, session_hint=hint)
    assert parked["correlation_id"].startswith(f"{hint}::pack=support::flow=refund::n=")
    assert parked["store_key"] == f"{hint}::pack=support::" + sha("conv-9\n\n\n")
    assert parked["user_id"] == "sess" + hashlib.sha256(f"{hint}::pack=support".encode()).digest()[:8].hex()


def test_two_parks_get_different_nonces_for_different_keys(engine):
    first = park(engine, conversation="conv-1")
    second = park(engine, conversation="conv-2")
    assert nonce_of(first["correlation_id"]) != nonce_of(second["correlation_id"])
    assert first["store_key"] != second["store_key"]


@pytest.mark.parametrize("reason", ["agent_reply", "approval", "external_tool"])
def test_each_reason_round_trips_and_the_start_gives_the_snapshot_back_unchanged(engine, bus, reason):
    parked = park(engine, reason)
    output = {"reply": "yes", "items": [3, 1, 2]}
    resumed = resume(bus, parked["correlation_id"], output, token=TOKEN)
    assert resumed.status_code == 201, resumed.content
    admission = resumed.json()["admission"]
    assert (admission["source"], admission["fresh"], admission["run_id"]) == ("dispatch", True, parked["run_id"])
    started = post(engine, f"/api/v1/admissions/{admission['id']}/start", {})
    assert started.status_code == 201, started.content
    body = started.json()
    assert body["suspension"]["continuation"]["provenance"]["flow_snapshot"] == SNAPSHOT
    assert body["suspension"]["correlation_id"] == parked["correlation_id"]
    assert json.loads(body["input"]) == output
    assert body["input"] == json.dumps(output, sort_keys=True, separators=(",", ":"))


def test_an_approval_wait_answered_by_dispatch_closes_its_approval_request(engine, bus):
    parked = park(engine, "approval")
    assert resume(bus, parked["correlation_id"], token=TOKEN).status_code == 201
    approval = Approval.objects.get(suspension_id=parked["suspension_id"])
    assert (approval.status, approval.decided_by) == ("approved", "token:bus")


def test_an_approval_wait_without_a_decision_token_is_refused_so_the_bus_alone_never_approves(engine):
    body = {"envelope": envelope(), "snapshot": SNAPSHOT, "reason": "approval"}
    problem = refused(lambda: post(engine, "/api/v1/flow-waits", body), 400, "invalid_request")
    assert "decision_token" in problem["errors"]


def test_an_approval_wait_is_not_approved_by_the_bus_without_its_token(engine, bus):
    parked = park(engine, "approval")
    refused(lambda: resume(bus, parked["correlation_id"]), 403, "bad_token")


BAD_PARKS = {
    "tenant not a scope segment": park_body(tenant="Acme"),
    "env not a scope segment": park_body(env="prod/eu"),
    "session hint without the conversation": park_body(session_hint="my-session"),
    "flow holding a marker": park_body(flow="refund::thread=x"),
    "conversation holding a colon": park_body(conversation="conv:9"),
    "pack missing": park_body(pack=""),
    "unknown envelope field": park_body(mood="calm"),
    "snapshot not an object": {**park_body(), "snapshot": [1, 2]},
    "negative ttl": {**park_body(), "ttl_seconds": -1},
    "unknown reason": park_body(reason="telepathy"),
}


@pytest.mark.parametrize("body", BAD_PARKS.values(), ids=BAD_PARKS.keys())
def test_a_bad_park_is_refused_and_writes_nothing(engine, body):
    refused(lambda: post(engine, "/api/v1/flow-waits", body), 400, "invalid_request")


def test_a_park_needs_the_engine_role_in_the_scope(bus):
    refused(lambda: post(bus, "/api/v1/flow-waits", park_body()), 403, "forbidden")


def test_a_second_park_on_a_live_key_is_already_suspended(engine):
    park(engine)
    refused(lambda: post(engine, "/api/v1/flow-waits", park_body("approval")), 409, "already_suspended")


def test_a_key_is_free_again_once_its_wait_was_cancelled_or_resumed(engine, bus):
    first = park(engine)
    cancelled = post(engine, f"/api/v1/runs/{first['run_id']}/cancel", {"revision": first["run_revision"]})
    assert cancelled.status_code == 200, cancelled.content
    second = park(engine)
    assert resume(bus, second["correlation_id"]).status_code == 201
    third = park(engine)
    assert len({first["run_id"], second["run_id"], third["run_id"]}) == 3
    assert FlowWait.objects.filter(live=True).get().run_id.hex == third["run_id"].replace("-", "")


def keyed(text):
    """What the server keeps of a decision token (issue 32): HMAC-SHA256 of its SHA-256 under the data key."""
    key = hashlib.sha256(b"suspensions decision token\0" + settings.DATA_ENCRYPTION_KEYS[0].encode()).digest()
    return hmac.new(key, sha(text).encode(), hashlib.sha256).hexdigest()


def test_a_decision_token_is_stored_as_a_keyed_hash_and_written_nowhere_else(engine, bus):
    parked = park(engine, token=TOKEN)
    resumed = resume(bus, parked["correlation_id"], token=TOKEN)
    assert resumed.status_code == 201, resumed.content
    # Not the unsalted SHA-256 anyone holding the table could test guesses against.
    assert FlowWait.objects.get().decision_token_hash == keyed(TOKEN) != sha(TOKEN)
    assert TOKEN not in json.dumps(parked) + resumed.content.decode()
    assert TOKEN not in all_event_data()
    assert TOKEN not in "".join(Suspension.objects.values_list("pending", "continuation").get())


def wrong_nonce(cid):
    return cid.replace(nonce_of(cid), OTHER_NONCE)


def no_nonce(cid):
    return cid.rsplit("::n=", 1)[0]


def other_flow(cid):
    return cid.replace("::flow=refund::", "::flow=other::")


GATES = {
    "wrong nonce": (wrong_nonce, TOKEN, 409, "wrong_gate"),
    "no nonce": (no_nonce, TOKEN, 409, "wrong_gate"),
    "uppercase nonce": (lambda cid: cid.replace(nonce_of(cid), nonce_of(cid).upper()), TOKEN, 409, "wrong_gate"),
    "another flow": (other_flow, TOKEN, 409, "wrong_gate"),
    "missing token": (lambda cid: cid, None, 403, "bad_token"),
    "wrong token": (lambda cid: cid, TOKEN + "x", 403, "bad_token"),
}


@pytest.mark.parametrize("gate", GATES.values(), ids=GATES.keys())
def test_the_gate_refuses_and_writes_nothing_and_never_shows_the_token(engine, bus, gate):
    change, token, status, code = gate
    parked = park(engine, token=TOKEN)
    body = refused(lambda: resume(bus, change(parked["correlation_id"]), token=token), status, code)
    assert TOKEN not in json.dumps(body)
    assert TOKEN not in all_event_data()


def test_a_correlation_id_without_pack_and_flow_is_refused(engine, bus):
    parked = park(engine)
    bare = parked["correlation_id"].split("::pack=")[0]
    refused(lambda: resume(bus, bare), 400, "invalid_request")


def test_a_resume_naming_a_tenant_that_is_not_a_scope_segment_is_refused(engine, bus):
    parked = park(engine)
    refused(lambda: resume(bus, parked["correlation_id"], tenant="ACME"), 400, "invalid_request")


def test_a_correlation_id_of_no_parked_wait_is_not_found(engine, bus):
    parked = park(engine)
    elsewhere = parked["correlation_id"].replace(":conv-9:", ":conv-0:")
    refused(lambda: resume(bus, elsewhere), 404, "not_found")


def test_a_resume_needs_the_bus_role_and_the_scope(engine, token):
    parked = park(engine)
    refused(lambda: resume(engine, parked["correlation_id"]), 403, "forbidden")
    stranger = client(token("globex", ["bus"], "stranger"))
    refused(lambda: resume(stranger, parked["correlation_id"]), 404, "not_found")


def test_an_output_over_the_bound_is_refused(engine, bus, settings):
    parked = park(engine)
    settings.MAX_INPUT_BYTES = 64
    refused(lambda: resume(bus, parked["correlation_id"], output="x" * 63), 413, "input_too_large")


def test_an_expired_wait_is_left_to_the_sweeper(engine, bus):
    parked = park(engine)
    Suspension.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    refused(lambda: resume(bus, parked["correlation_id"]), 410, "suspension_expired")


def test_a_second_resume_replays_or_conflicts_and_never_runs_again(engine, bus):
    parked = park(engine)
    first = resume(bus, parked["correlation_id"], {"n": 1})
    assert first.status_code == 201, first.content
    again = resume(bus, parked["correlation_id"], {"n": 1})
    assert again.status_code == 200, again.content
    assert again.json()["admission"] == {**first.json()["admission"], "fresh": False}
    refused(lambda: resume(bus, parked["correlation_id"], {"n": 2}), 409, "admission_conflict")
    started = post(engine, f"/api/v1/admissions/{first.json()['admission']['id']}/start", {})
    assert started.status_code == 201, started.content
    assert resume(bus, parked["correlation_id"], {"n": 1}).json()["fresh"] is False
    assert (Run.objects.count(), Admission.objects.count()) == (1, 1)


def test_a_resume_after_the_wait_was_cancelled_is_not_suspended(engine, bus):
    parked = park(engine)
    post(engine, f"/api/v1/runs/{parked['run_id']}/cancel", {"revision": parked["run_revision"]})
    refused(lambda: resume(bus, parked["correlation_id"]), 409, "not_suspended")


def version_of(parked):
    return {"run_id": parked["run_id"], "suspension_id": parked["suspension_id"], "run_revision": 2}


OTHER_DOORS = {
    "bus admission": ("agent_reply", "bus", "admissions", lambda p: {"input": "{}", "reply_with": p["store_key"]}),
    "one-shot resume": (
        "external_tool",
        "engine",
        "resume",
        lambda p: {"results": [{"call_id": "dispatch", "content": "ok"}]},
    ),
}


@pytest.mark.parametrize("door", OTHER_DOORS.values(), ids=OTHER_DOORS.keys())
def test_the_run_doors_refuse_a_flow_wait(engine, token, door):
    reason, role, action, extra = door
    parked = park(engine, reason)
    c = client(token("acme", [role], f"door-{role}"))
    body = {"version": version_of(parked), **extra(parked)}
    refused(lambda: post(c, f"/api/v1/runs/{parked['run_id']}/{action}", body), 409, "wrong_gate")


def test_the_approval_door_refuses_a_flow_wait(engine, token):
    parked = park(engine, "approval")
    approver = client(token("acme", ["approver"], "approver"))
    body = {"version": version_of(parked), "decision": "approve"}
    url = f"/api/v1/approvals/{parked['suspension_id']}/decide"
    refused(lambda: post(approver, url, body), 409, "wrong_gate")


@pytest.mark.django_db(transaction=True)
def test_racing_resumes_by_correlation_id_admit_exactly_once(token):
    parked = park(client(token("acme", ["engine"], "engine")))
    secret = token("acme", ["bus"], "bus")
    [answers] = race(
        RACERS, [parked], lambda n, p: resume(client(secret), p["correlation_id"], {"racer": n}).status_code
    )
    assert sorted(answers) == [201] + [409] * (RACERS - 1)
    assert (Admission.objects.count(), Run.objects.count()) == (1, 1)


@pytest.mark.django_db(transaction=True)
def test_racing_parks_on_one_key_leave_exactly_one_live_wait(token):
    secret = token("acme", ["engine"], "engine")

    def act(n, body):
        response = post(client(secret), "/api/v1/flow-waits", body)
        return response.status_code, response.json().get("code")

    [answers] = race(RACERS, [park_body()], act)
    assert sorted(answers) == [(201, None)] + [(409, "already_suspended")] * (RACERS - 1)
    assert (FlowWait.objects.count(), Run.objects.count(), Suspension.objects.count()) == (1, 1, 1)
