"""T1 register, T2 suspend, T3 one-shot resume, T7 cancel, T8 complete/fail: every effect each one writes."""

from datetime import datetime, timedelta

import pytest

from suspensions import digests
from suspensions.models import Admission, AdmissionState, Event, Run, Start, Suspension
from suspensions.services.claims import FAR_FUTURE
from tests.helpers import call, continuation, pause, post, register, resume, snapshot, version

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")

# Literal backslash-u escape and odd spacing: the engine's own encoding, kept as text.
ODD_ARGUMENTS = r'{"b": 1,  "a":"\u00e9"}'


def events_of(run_id: str) -> list[tuple[str, str, int]]:
    return list(Event.objects.filter(run_id=run_id).order_by("id").values_list("kind", "actor", "revision"))


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def resumed(c, s, results=None):
    response = resume(c, s, results)
    assert response.status_code == 201, response.content
    return response.json()


# -- T1 ----------------------------------------------------------------------------


def test_register_creates_a_running_run_at_revision_one_with_its_event(engine):
    run = register(engine, agent_id="refund-agent")
    assert (run["state"], run["revision"], run["scope"], run["agent_id"]) == ("running", 1, "acme", "refund-agent")
    assert run["suspension_id"] is None
    assert events_of(run["id"]) == [("registered", "token:engine", 1)]


def test_register_stamps_a_scope_below_the_tokens_into_every_prefix_column(engine):
    run = Run.objects.get(pk=register(engine, scope="acme/support/eu")["id"])
    assert (run.scope_l1, run.scope_l2, run.scope_l3) == ("acme", "acme/support", "acme/support/eu")


# -- T2 ----------------------------------------------------------------------------


def test_suspend_pauses_the_run_and_writes_the_suspension_and_its_event(engine):
    s = pause(engine, ttl_seconds=60)
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision, run.last_reason) == ("paused", 2, "external_tool")
    assert s["run_revision"] == 2
    assert Suspension.objects.get(pk=s["id"]).run_id == run.id
    assert moment(s["expires_at"]) - moment(s["created_at"]) == timedelta(seconds=60)
    assert events_of(run.id) == [("registered", "token:engine", 1), ("suspended", "token:engine", 2)]
    assert Event.objects.get(run_id=run.id, kind="suspended").data["suspension_id"] == s["id"]


def test_suspend_without_a_ttl_takes_the_default_deadline(engine, settings):
    s = pause(engine)
    delta = moment(s["expires_at"]) - moment(s["created_at"])
    assert delta == timedelta(seconds=settings.SUSPENSION_TTL_SECONDS)


def test_suspend_with_ttl_zero_never_expires(engine):
    s = pause(engine, ttl_seconds=0)
    assert s["expires_at"] is None
    assert Suspension.objects.get(pk=s["id"]).deadline == FAR_FUTURE


def test_run_detail_names_the_live_suspension(engine):
    s = pause(engine)
    detail = engine.get(f"/api/v1/runs/{s['run_id']}").json()
    assert (detail["state"], detail["revision"], detail["suspension_id"]) == ("paused", 2, s["id"])


def test_an_absent_tools_restricted_reads_as_false(engine):
    s = pause(engine)
    detail = engine.get(f"/api/v1/suspensions/{s['id']}").json()
    assert detail["continuation"]["config"] == {**continuation()["config"], "tools_restricted": False}
    assert s["continuation"]["config"]["tools_restricted"] is False


def test_an_empty_restricted_tool_list_comes_back_as_given(engine):
    config = {"model": "m-1", "temperature": 0.25, "tools": [], "tools_restricted": True, "context": None}
    cont = continuation(config=config, usage={"input": 10}, prepared="AAEC")
    s = pause(engine, cont=cont)
    detail = engine.get(f"/api/v1/suspensions/{s['id']}").json()
    assert detail["continuation"] == cont
    assert s["continuation"] == cont


def test_pending_arguments_are_returned_byte_for_byte(engine):
    pending = [call("c1", arguments=ODD_ARGUMENTS), call("c2", arguments='{"b": 1,  "a":"é"}')]
    s = pause(engine, pending=pending)
    assert s["pending"] == pending
    assert engine.get(f"/api/v1/suspensions/{s['id']}").json()["pending"] == pending
    assert engine.get("/api/v1/suspensions").json()["results"][0]["pending"] == pending


# -- T3 ----------------------------------------------------------------------------


def test_resume_admits_and_starts_in_one_step_and_consumes_the_pause(engine):
    s = pause(engine)
    results = [{"call_id": "c1", "content": {"refunded": 900}}]
    body = resumed(engine, s, results)
    run = Run.objects.get(pk=s["run_id"])
    admission = Admission.objects.get(run_id=run.id)
    start = Start.objects.get(run_id=run.id)
    assert (run.state, run.revision) == ("running", 3)
    assert not Suspension.objects.filter(pk=s["id"]).exists()
    assert (admission.state, admission.source, admission.actor) == (AdmissionState.STARTED, "one_shot", "token:engine")
    assert (admission.version_revision, admission.claimed_revision) == (2, 3)
    assert admission.input == digests.canonical(results).decode()
    assert (start.admission_id, start.run_revision, str(start.suspension_id)) == (admission.id, 3, s["id"])
    assert events_of(run.id)[-2:] == [("admitted", "token:engine", 3), ("started", "token:engine", 3)]
    assert (body["fresh"], body["run_state"], body["run_revision"]) == (True, "running", 3)
    assert body["admission"]["claimed_revision"] == 3
    assert body["admission"]["request_digest"] == admission.request_digest
    assert body["start"]["digest"] == start.digest
    assert body["suspension"]["continuation"] == {
        **continuation(),
        "config": {**continuation()["config"], "tools_restricted": False},
    }
    assert body["results"] == results


def test_resume_returns_results_in_pending_order_not_the_order_sent(engine):
    s = pause(engine, pending=[call("c1"), call("c2", name="lookup"), call("c3", name="notify")])
    sent = [
        {"call_id": "c3", "content": "third"},
        {"call_id": "c1", "error": "timed out"},
        {"call_id": "c2", "content": None},
    ]
    body = resumed(engine, s, sent)
    assert [r["call_id"] for r in body["results"]] == ["c1", "c2", "c3"]
    assert body["results"] == [sent[1], sent[2], sent[0]]


def test_the_identical_resume_again_replays_the_receipt_without_the_continuation(engine):
    s = pause(engine)
    first = resumed(engine, s)
    before = snapshot()
    again = resume(engine, s, [{"call_id": "c1", "content": "done"}])
    assert again.status_code == 200
    replay = again.json()
    assert replay["fresh"] is False and replay["admission"]["fresh"] is False
    assert replay["admission"]["request_digest"] == first["admission"]["request_digest"]
    assert replay["start"] == first["start"]
    assert {"suspension", "results", "input"}.isdisjoint(replay)
    assert snapshot() == before


def test_a_retry_with_other_key_order_and_spacing_is_the_identical_request(engine):
    s = pause(engine)
    first = resumed(engine, s, [{"call_id": "c1", "content": {"a": 1, "b": [1, 2]}}])
    v = version(s)
    text = (
        '{"results":[{"content":{"b":[1,2],"a":1},"call_id":"c1"}],   "version":'
        f'{{"run_revision":{v["run_revision"]},"suspension_id":"{v["suspension_id"]}","run_id":"{v["run_id"]}"}}}}'
    )
    again = engine.post(f"/api/v1/runs/{s['run_id']}/resume", data=text, content_type="application/json")
    assert again.status_code == 200, again.content
    assert again.json()["admission"]["request_digest"] == first["admission"]["request_digest"]


def test_the_identical_resume_replays_even_after_the_run_completed(engine):
    s = pause(engine)
    first = resumed(engine, s)
    post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": first["admission"]["claimed_revision"]})
    again = resume(engine, s, [{"call_id": "c1", "content": "done"}])
    assert again.status_code == 200
    assert (again.json()["fresh"], again.json()["run_state"]) == (False, "completed")
    assert "suspension" not in again.json()


def test_a_new_pause_ends_the_previous_execution(engine):
    s = pause(engine)
    resumed(engine, s)
    body = {"revision": 3, "reason": "external_tool", "pending": [call("c9")], "continuation": continuation()}
    response = post(engine, f"/api/v1/runs/{s['run_id']}/suspend", body)
    assert response.status_code == 201, response.content
    assert response.json()["run_revision"] == 4
    assert Admission.objects.get(run_id=s["run_id"]).state == AdmissionState.DONE


# -- T7 / T8 ------------------------------------------------------------------------


def test_complete_finishes_the_run_and_marks_its_admission_done(engine):
    s = pause(engine)
    claimed = resumed(engine, s)["admission"]["claimed_revision"]
    response = post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": claimed})
    assert response.status_code == 200, response.content
    assert (response.json()["state"], response.json()["revision"]) == ("completed", 4)
    assert Admission.objects.get(run_id=s["run_id"]).state == AdmissionState.DONE
    assert events_of(s["run_id"])[-1] == ("completed", "token:engine", 4)


def test_fail_finishes_the_run_with_its_error(engine):
    s = pause(engine)
    resumed(engine, s)
    response = post(engine, f"/api/v1/runs/{s['run_id']}/fail", {"revision": 3, "error": "model refused"})
    assert response.status_code == 200, response.content
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision, run.error) == ("failed", 4, "model refused")
    assert Admission.objects.get(run_id=run.id).state == AdmissionState.DONE
    event = Event.objects.filter(run_id=run.id).latest("id")
    assert (event.kind, event.revision, event.data) == ("failed", 4, {"error": "model refused"})


def test_complete_a_run_that_never_paused(engine):
    run = register(engine)
    response = post(engine, f"/api/v1/runs/{run['id']}/complete", {"revision": 1})
    assert (response.status_code, response.json()["state"], response.json()["revision"]) == (200, "completed", 2)


def test_cancel_a_paused_run_deletes_its_pause(engine):
    s = pause(engine)
    response = post(engine, f"/api/v1/runs/{s['run_id']}/cancel", {"revision": 2})
    assert response.status_code == 200, response.content
    assert (response.json()["state"], response.json()["revision"]) == ("cancelled", 3)
    assert not Suspension.objects.filter(pk=s["id"]).exists()
    assert not Admission.objects.filter(run_id=s["run_id"]).exists()
    assert events_of(s["run_id"])[-1] == ("cancelled", "token:engine", 3)


def test_cancel_a_running_run_cancels_its_admission(engine):
    s = pause(engine)
    resumed(engine, s)
    response = post(engine, f"/api/v1/runs/{s['run_id']}/cancel", {"revision": 3})
    assert (response.status_code, response.json()["state"], response.json()["revision"]) == (200, "cancelled", 4)
    assert Admission.objects.get(run_id=s["run_id"]).state == AdmissionState.CANCELLED


def test_events_list_the_whole_timeline_oldest_first(engine):
    s = pause(engine)
    resumed(engine, s)
    post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": 3})
    rows = engine.get(f"/api/v1/runs/{s['run_id']}/events").json()["results"]
    assert [(e["kind"], e["revision"]) for e in rows] == [
        ("registered", 1),
        ("suspended", 2),
        ("admitted", 3),
        ("started", 3),
        ("completed", 4),
    ]
    assert {e["actor"] for e in rows} == {"token:engine"}
