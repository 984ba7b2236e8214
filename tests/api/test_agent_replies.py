"""Agent replies admitted by the bus (T4): reply_with, digests, the 8 MiB bound, replays and conflicts."""

import hashlib
import json
from datetime import timedelta

import pytest
from django.conf import settings

from suspensions import digests
from suspensions.models import Admission, Event, Run, Suspension
from tests.helpers import client, continuation, pause, post, refused, snapshot, version

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")


@pytest.fixture
def bus(db, token):
    return client(token("acme", ["bus"], "bus"))


def reply_pause(engine, **kwargs):
    # tools_restricted given explicitly, so the pause as answered is the pause as stored.
    cont = continuation(config={"model": "m-1", "tools": ["ask"], "tools_restricted": False})
    return pause(engine, reason="agent_reply", cont=cont, **kwargs)


def admit(c, s, input='{"answer": 42}', reply_with="q-1", **overrides):
    body = {"version": version(s), "input": input, "reply_with": reply_with, **overrides}
    return post(c, f"/api/v1/runs/{s['run_id']}/admissions", body)


def sha256_of(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def without_fresh(receipt):
    return {key: value for key, value in receipt.items() if key != "fresh"}


def expire(s):
    past = Run.objects.get(pk=s["run_id"]).updated_at - timedelta(seconds=1)
    Suspension.objects.filter(pk=s["id"]).update(expires_at=past, deadline=past)


# -- the fresh admission ----------------------------------------------------------------


def test_admit_claims_the_pause_and_binds_the_exact_input(engine, bus):
    s = reply_pause(engine)
    response = admit(bus, s)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["run_state"], body["run_revision"], body["fresh"]) == ("running", 3, True)
    receipt = body["admission"]
    assert (receipt["source"], receipt["actor"], receipt["claimed_revision"]) == ("agent_reply", "token:bus", 3)
    assert (receipt["fresh"], receipt["valid"]) == (True, True)
    assert "suspension" not in body and "input" not in body
    assert Admission.objects.get(pk=receipt["id"]).state == "admitted"
    # The pause stays until a start consumes it.
    assert Suspension.objects.filter(pk=s["id"]).exists()
    assert Event.objects.filter(run_id=s["run_id"], kind="admitted", actor="token:bus").exists()


def test_the_input_is_retained_byte_for_byte(engine, bus):
    s = reply_pause(engine)
    text = '{ "b" : 1,\n  "a":"\\u00e9", "n": 1.50 }'
    receipt = admit(bus, s, input=text).json()["admission"]
    assert Admission.objects.get(pk=receipt["id"]).input == text
    started = post(engine, f"/api/v1/admissions/{receipt['id']}/start", {}).json()
    assert started["input"] == text


def test_the_request_digest_is_sha256_of_canonical_scope_version_and_input(engine, bus):
    s = reply_pause(engine)
    text = '{"answer": "ünïcode"}'
    receipt = admit(bus, s, input=text).json()["admission"]
    assert receipt["request_digest"] == sha256_of({"scope": "acme", "version": version(s), "input": text})
    assert receipt["version"] == version(s)


def test_the_suspension_digest_is_sha256_of_the_pause_as_claimed(engine, bus):
    s = reply_pause(engine, ttl_seconds=600)
    receipt = admit(bus, s).json()["admission"]
    fields = ["id", "run_id", "scope", "reason", "pending", "continuation", "expires_at"]
    assert receipt["suspension_digest"] == sha256_of({key: s[key] for key in fields})


def test_a_receipt_whose_stored_input_was_altered_reads_as_invalid(engine, bus):
    s = reply_pause(engine)
    receipt = admit(bus, s).json()["admission"]
    # Tampering, as a hand edit of the table would do.
    Admission.objects.filter(pk=receipt["id"]).update(input='{"answer": 43}')
    latest = bus.get(f"/api/v1/runs/{s['run_id']}/admissions/latest").json()
    assert (latest["request_digest"], latest["valid"]) == (receipt["request_digest"], False)


# -- refusals -----------------------------------------------------------------------------


def test_a_reply_for_another_question_is_a_reply_mismatch(engine, bus):
    s = reply_pause(engine)
    body = refused(lambda: admit(bus, s, reply_with="q-2"), 409, "reply_mismatch")
    assert "q-1" in body["detail"]


@pytest.mark.parametrize("text", ["not json", "{'a': 1}", "", "[1,", "NaN", "[Infinity]"])
def test_an_input_that_is_not_json_text_is_refused(engine, bus, text):
    s = reply_pause(engine)
    body = refused(lambda: admit(bus, s, input=text), 400, "invalid_request")
    assert "input" in body["errors"]


@pytest.mark.parametrize("bad", [{"input": {"answer": 42}}, {"reply_with": None}, {"extra": 1}])
def test_a_malformed_admission_body_is_refused(engine, bus, bad):
    s = reply_pause(engine)
    refused(lambda: admit(bus, s, **bad), 400, "invalid_request")


def test_a_version_for_another_run_than_the_path_is_refused(engine, bus):
    s = reply_pause(engine)
    other = reply_pause(engine)
    body = {"version": version(other), "input": "1", "reply_with": "q-1"}
    refused(lambda: post(bus, f"/api/v1/runs/{s['run_id']}/admissions", body), 400, "invalid_request")


def test_a_stale_revision_is_a_version_conflict(engine, bus):
    s = reply_pause(engine)
    body = {"version": {**version(s), "run_revision": 1}, "input": "1", "reply_with": "q-1"}
    refused(lambda: post(bus, f"/api/v1/runs/{s['run_id']}/admissions", body), 409, "version_conflict")


def test_admitting_past_the_deadline_is_expired_and_leaves_the_run_paused(engine, bus):
    s = reply_pause(engine, ttl_seconds=60)
    expire(s)
    refused(lambda: admit(bus, s), 410, "suspension_expired")
    assert Run.objects.get(pk=s["run_id"]).state == "paused"


def test_admitting_a_cancelled_pause_is_not_suspended(engine, bus):
    s = reply_pause(engine)
    post(engine, f"/api/v1/runs/{s['run_id']}/cancel", {"revision": s["run_revision"]})
    refused(lambda: admit(bus, s), 409, "not_suspended")


def test_admitting_an_unknown_run_is_not_found(engine, bus):
    s = reply_pause(engine)
    body = {"version": {**version(s), "run_id": s["id"]}, "input": "1", "reply_with": "q-1"}
    refused(lambda: post(bus, f"/api/v1/runs/{s['id']}/admissions", body), 404, "not_found")


# -- idempotency --------------------------------------------------------------------------


def test_the_identical_request_again_replays_the_original_receipt(engine, bus):
    s = reply_pause(engine)
    first = admit(bus, s).json()
    before = snapshot()
    again = admit(bus, s)
    assert again.status_code == 200, again.content
    assert (again.json()["fresh"], again.json()["admission"]["fresh"]) == (False, False)
    assert without_fresh(again.json()["admission"]) == without_fresh(first["admission"])
    assert snapshot() == before


def test_a_different_request_for_the_claimed_pause_is_an_admission_conflict_naming_both_digests(engine, bus):
    s = reply_pause(engine)
    first = admit(bus, s).json()["admission"]
    body = refused(lambda: admit(bus, s, input='{"answer": 43}'), 409, "admission_conflict")
    mine = sha256_of({"scope": "acme", "version": version(s), "input": '{"answer": 43}'})
    assert (body["request_digest"], body["admitted_digest"]) == (mine, first["request_digest"])
    assert "42" not in body["detail"]


def test_a_byte_different_encoding_of_the_same_json_is_a_different_request(engine, bus):
    s = reply_pause(engine)
    admit(bus, s, input='{"answer": 42}')
    refused(lambda: admit(bus, s, input='{"answer":42}'), 409, "admission_conflict")


def test_a_replay_after_the_run_completed_still_returns_the_original_receipt(engine, bus):
    s = reply_pause(engine)
    first = admit(bus, s).json()["admission"]
    assert post(engine, f"/api/v1/admissions/{first['id']}/start", {}).status_code == 201
    done = post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": first["claimed_revision"]})
    assert done.json()["state"] == "completed"
    again = admit(bus, s)
    assert (again.status_code, again.json()["run_state"]) == (200, "completed")
    assert without_fresh(again.json()["admission"]) == without_fresh(first)


def test_a_different_request_after_the_run_moved_on_is_a_version_conflict(engine, bus):
    s = reply_pause(engine)
    first = admit(bus, s).json()["admission"]
    post(engine, f"/api/v1/admissions/{first['id']}/start", {})
    post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": first["claimed_revision"]})
    refused(lambda: admit(bus, s, input='"late"'), 409, "version_conflict")


# -- the 8 MiB bound, measured on the encoded input ----------------------------------------


def string_input(measure):
    """A JSON string input whose encoding (quotes and escaped quotes included) measures `measure` bytes."""
    text = '"' + "a" * (measure - 6) + '"'
    assert len(digests.canonical(text)) == measure
    return text


def test_an_input_exactly_at_the_bound_is_admitted(engine, bus):
    s = reply_pause(engine)
    text = string_input(settings.MAX_INPUT_BYTES)
    response = admit(bus, s, input=text)
    assert response.status_code == 201, response.content[:500]
    assert len(Admission.objects.get(run_id=s["run_id"]).input) == len(text)


def test_an_input_one_byte_over_the_bound_is_too_large(engine, bus):
    s = reply_pause(engine)
    text = string_input(settings.MAX_INPUT_BYTES + 1)
    refused(lambda: admit(bus, s, input=text), 413, "input_too_large")


def test_an_input_under_the_bound_whose_escapes_grow_it_over_is_too_large(engine, bus):
    s = reply_pause(engine)
    # Each `\n` escape (2 bytes) encodes as 3; the brackets and quotes add 8.
    count = (settings.MAX_INPUT_BYTES - 8) // 3 + 1
    text = '["' + "\\n" * count + '"]'
    assert len(text.encode()) < settings.MAX_INPUT_BYTES < len(digests.canonical(text))
    refused(lambda: admit(bus, s, input=text), 413, "input_too_large")


def test_multibyte_characters_count_as_their_utf8_bytes(engine, bus):
    s = reply_pause(engine)
    # "é" is 2 bytes in UTF-8: the limit is on bytes, not characters.
    chars = (settings.MAX_INPUT_BYTES - 6) // 2 + 1
    text = '"' + "é" * chars + '"'
    assert len(text) < settings.MAX_INPUT_BYTES < len(digests.canonical(text))
    body = {"version": version(s), "input": text, "reply_with": "q-1"}
    # Sent as UTF-8, as the bound measures it (an ASCII-escaped body would be over the body limit).
    raw = json.dumps(body, ensure_ascii=False).encode()
    url = f"/api/v1/runs/{s['run_id']}/admissions"
    refused(lambda: bus.post(url, data=raw, content_type="application/json"), 413, "input_too_large")
