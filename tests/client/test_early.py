"""The client's calls for early results, callback URLs and the version-drift guard (docs/api.md, "7.2 Runs"), against a
live gunicorn."""

import pytest
from suspensions_client import Claimed, Client, EarlyResult, NotFound, Suspension, VersionDrift

from suspensions.models import Admission, Event, Run

from .conftest import cont, pending


def test_early_results_resume_the_pause_that_the_loop_helper_stores(engine):
    run = engine.register("early-agent")
    kept = engine.early_result(run, "c1", {"rows": 1})
    assert isinstance(kept, EarlyResult) and kept.fresh and kept.resume is None
    again = engine.early_result(run.id, "c1", {"rows": 1})
    assert (again.fresh, again.digest) == (False, kept.digest)
    pause = engine.pause_for_tools(run, [pending("c1", "query", "{}")], cont(), engine_version="engine-1")
    assert isinstance(pause, Suspension) and pause.engine_version == "engine-1"
    assert isinstance(pause.resume, Claimed) and pause.resume.fresh
    assert pause.resume.results == [{"call_id": "c1", "content": {"rows": 1}}]
    assert (pause.run_state, pause.run_revision, pause.resume.run_revision) == ("paused", 2, 3)
    replay = engine.resume(pause, pause.resume.results)
    assert replay.fresh is False and replay.admission.id == pause.resume.admission.id
    engine.complete(pause.resume)
    assert Run.objects.get(pk=run.id).state == "completed"


def test_the_last_missing_early_result_resumes_the_live_pause(engine):
    run = engine.register("early-agent")
    pause = engine.pause_for_tools(run, [pending("c1"), pending("c2")], cont())
    assert pause.resume is None and engine.early_result(run, "c1", 1).resume is None
    last = engine.early_result(run, "c2", None)
    assert last.resume is not None and last.resume.suspension.id == pause.id
    assert last.resume.results == [{"call_id": "c1", "content": 1}, {"call_id": "c2", "content": None}]


def test_a_callback_url_resumes_without_a_token(engine, base_url):
    run = engine.register("callback-agent")
    pause = engine.pause_for_tools(run, [pending("c1")], cont(), callback=True)
    assert pause.callback_url and pause.callback_url.startswith(base_url)
    with Client(base_url, "sus_not-a-token") as third_party:
        resumed = third_party.resume_by_callback(pause.callback_url, pause, [{"call_id": "c1", "content": "ok"}])
        assert resumed.fresh and resumed.admission.actor == "callback"
        replay = third_party.resume_by_callback(pause.callback_url, pause, [{"call_id": "c1", "content": "ok"}])
        assert replay.fresh is False
        with pytest.raises(NotFound):
            third_party.resume_by_callback(pause.callback_url + "x", pause, [{"call_id": "c1", "content": "ok"}])
    assert Admission.objects.get(run_id=run.id).actor == "callback"


def test_a_drifted_resume_raises_version_drift_until_it_accepts_it(engine):
    run = engine.register("drift-agent")
    pause = engine.pause_for_tools(run, [pending("c1")], cont(), engine_version="v1")
    results = [{"call_id": "c1", "content": 1}]
    with pytest.raises(VersionDrift) as drift:
        engine.resume(pause, results, engine_version="v2")
    assert (drift.value.engine_version, drift.value.pause_engine_version) == ("v2", "v1")
    resumed = engine.resume(pause, results, engine_version="v2", accept_drift=True)
    assert resumed.fresh
    assert Event.objects.get(run_id=run.id, kind="started").data["accept_drift"] is True


def test_a_drifted_start_raises_version_drift_until_it_accepts_it(engine, approver):
    run = engine.register("drift-agent")
    pause = engine.pause_for_approval(run, [pending("c9")], cont(), engine_version="v1")
    admitted = approver.decide(pause.id, pause, "approve")
    with pytest.raises(VersionDrift):
        engine.start(admitted, engine_version="v2")
    started = engine.start(admitted, engine_version="v2", accept_drift=True)
    assert started.fresh and started.suspension.engine_version == "v1"
