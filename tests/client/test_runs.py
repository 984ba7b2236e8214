"""The sync client against a live gunicorn: runs, pauses, one-shot resumes, approvals, admissions, starts."""

import json

import pytest
from suspensions_client import Claimed, Denial, Event, LatestAdmission, Page, Suspension, WaitTimeout
from suspensions_client import Run as RunResult

from suspensions.models import Admission, Run, Start

from .conftest import cont, pending


def test_register_returns_a_typed_run_that_get_list_and_events_read_back(engine):
    run = engine.register("agent-7", scope="acme/support", session_id="sess-9")
    assert isinstance(run, RunResult)
    assert (run.scope, run.agent_id, run.session_id, run.state, run.revision) == (
        "acme/support",
        "agent-7",
        "sess-9",
        "running",
        1,
    )
    assert run.suspension_id is None and run.created_at.tzinfo is not None
    assert engine.get_run(run.id) == run
    page = engine.list_runs(agent_id="agent-7", state="running", scope="acme/support", page_size=5)
    assert isinstance(page, Page) and [r.id for r in page] == [run.id]
    assert engine.list_runs(agent_id="agent-7", state="paused").results == []
    events = engine.list_events(run.id)
    assert all(isinstance(e, Event) for e in events) and [e.kind for e in events] == ["registered"]
    assert events.results[0].data == {"agent_id": "agent-7"} and events.next_cursor is None


def test_lists_page_with_the_cursor_of_the_next_link(engine):
    ids = [engine.register("pager").id for _ in range(3)]
    first = engine.list_runs(agent_id="pager", page_size=2)
    second = engine.list_runs(agent_id="pager", page_size=2, cursor=first.next_cursor)
    assert [r.id for r in first] + [r.id for r in second] == ids[::-1]
    assert second.next_cursor is None and second.previous_cursor is not None


def test_a_suspend_and_a_one_shot_resume_return_the_pause_and_the_results_once(engine):
    run = engine.register("vpc-agent")
    pause = engine.suspend(
        run,
        reason="external_tool",
        pending=[pending("c1", "query", '{"sql": "select 1"}'), pending("c2", "query", "[1, 2]")],
        continuation=cont(),
        ttl_seconds=3600,
    )
    assert isinstance(pause, Suspension)
    assert (pause.reason, pause.run_state, pause.run_revision) == ("external_tool", "paused", 2)
    assert pause.pending[0].arguments == '{"sql": "select 1"}'
    assert pause.pending[0].arguments_json() == {"sql": "select 1"} and pause.pending[1].arguments_json() == [1, 2]
    assert pause.continuation["config"]["tools_restricted"] is False and pause.expires_at is not None
    assert engine.get_suspension(pause.id) == pause
    rows = engine.list_suspensions(tool="query", reason="external_tool")
    assert [(s.id, s.agent_id, s.version) for s in rows] == [(pause.id, "vpc-agent", pause.version)]

    results = [{"call_id": "c2", "content": [3]}, {"call_id": "c1", "error": "timeout"}]
    resumed = engine.resume(pause, results)
    assert isinstance(resumed, Claimed) and resumed.fresh and resumed.admission.fresh
    assert resumed.results == [results[1], results[0]]  # in pending order
    assert resumed.suspension.continuation == pause.continuation and resumed.start.valid
    replay = engine.resume(pause.version, results)
    assert (replay.fresh, replay.admission.fresh, replay.suspension, replay.results) == (False, False, None, None)
    assert replay.admission.request_digest == resumed.admission.request_digest

    done = engine.complete(resumed)
    assert (done.state, done.revision) == ("completed", 4)
    assert Admission.objects.get(run_id=run.id).state == "done"


def test_fail_and_cancel_end_runs_with_their_revision(engine):
    failing, cancelled = engine.register("a"), engine.register("b")
    failed = engine.fail(failing, "model refused")
    assert (failed.state, failed.error, failed.revision) == ("failed", "model refused", 2)
    paused = engine.suspend(cancelled, reason="external_tool", pending=[pending()], continuation=cont())
    gone = engine.cancel(paused.run_id, revision=paused.run_revision)
    assert (gone.state, gone.revision, gone.suspension_id) == ("cancelled", 3, None)


def test_an_approval_is_paused_decided_waited_for_started_and_completed(engine, approver):
    run = engine.register("support-agent")
    calls = [{"id": "call_9", "name": "send_refund", "arguments": {"amount": 900}}]
    pause = engine.pause_for_approval(run, calls, cont(), ttl_seconds=3600)
    assert pause.pending[0].arguments == '{"amount": 900}' and pause.reason == "approval"
    assert [s.id for s in approver.list_approvals(tool="send_refund")] == [pause.id]
    asked = approver.get_approval(pause.id)
    assert (asked.status, asked.version, asked.agent_id) == ("pending", pause.version, "support-agent")
    assert asked.calls[0].arguments_json() == {"amount": 900}

    decision = approver.decide(pause.id, asked.version, "approve", reason="within policy")
    assert isinstance(decision, Claimed) and decision.fresh and decision.admission.source == "approval"
    assert decision.suspension is None and decision.input is None  # an admission grants no execution
    assert [a.id for a in engine.admitted_work()] == [decision.admission.id]

    outcome = engine.wait_for_admission(pause.run_id, pause.id, timeout=60, poll_interval=0.2)
    assert (outcome.status, outcome.admitted, outcome.admission.id) == ("admitted", True, decision.admission.id)
    started = engine.start(outcome)
    assert started.fresh and started.suspension.pending == pause.pending
    admitted = started.input_json()
    assert (admitted["decision"], admitted["approver"], admitted["note"]) == (
        "approve",
        decision.admission.actor,
        "within policy",
    )
    assert [(c["id"], c["arguments"]) for c in admitted["calls"]] == [("call_9", '{"amount": 900}')]
    latest = engine.latest_admission(run.id)
    assert isinstance(latest, LatestAdmission) and latest.state == "started"
    assert latest.start.digest == started.start.digest
    assert [(a.id, a.state) for a in engine.list_admissions(run.id)] == [(latest.id, "started")]
    assert engine.admitted_work().results == [] and len(engine.admitted_work(state="started")) == 1
    assert engine.complete(started).state == "completed"
    assert approver.get_approval(pause.id).status == "approved"


def test_a_denial_ends_the_wait_with_the_approvers_reason(engine, approver):
    pause = engine.pause_for_approval(engine.register("a"), [pending()], cont())
    denial = approver.decide(pause.id, pause.version, "deny", reason="not within policy")
    assert isinstance(denial, Denial) and (denial.run_state, denial.fresh) == ("failed", True)
    assert approver.decide(pause.id, pause.version, "deny", reason="not within policy").fresh is False
    outcome = engine.wait_for_admission(pause.run_id, pause.id, timeout=60, poll_interval=0.2)
    assert (outcome.status, outcome.admitted, outcome.reason) == ("denied", False, "not within policy")
    assert outcome.admission is None and outcome.run.state == "failed"


def test_a_wait_nobody_answers_ends_with_wait_timeout_and_leaves_the_pause(engine):
    pause = engine.pause_for_approval(engine.register("a"), [pending()], cont())
    with pytest.raises(WaitTimeout) as timeout:
        engine.wait_for_admission(pause.run_id, pause.id, timeout=0.5, poll_interval=0.1)
    assert (timeout.value.run_id, timeout.value.suspension_id) == (pause.run_id, pause.id)
    assert Run.objects.get(pk=pause.run_id).state == "paused"


def test_an_agent_reply_is_discovered_admitted_by_the_bus_and_started_with_its_input_verbatim(connect, engine):
    bus = connect("bus")
    run = engine.register("asker")
    ask = dict(pending("ask_1", "ask_peer", '{"question": "stock?"}'), reply_with="q-7f3a")
    pause = engine.suspend(run, reason="agent_reply", pending=[ask], continuation=cont())
    assert pause.pending[0].reply_with == "q-7f3a"
    found = bus.agent_reply_runs(limit=10)
    assert (found.runs, found.next) == ([run.id], None)
    assert engine.list_suspensions(reply_with="q-7f3a").results[0].id == pause.id
    text = '{"answer":  12, "unit": "crates"}'
    admitted = bus.admit_reply(pause, input=text, reply_with="q-7f3a")
    assert admitted.admission.source == "agent_reply" and admitted.fresh
    assert bus.admit_reply(pause, input=text, reply_with="q-7f3a").fresh is False
    started = engine.start(admitted)
    assert started.input == text and started.input_json() == {"answer": 12, "unit": "crates"}
    assert Start.objects.filter(run_id=run.id).count() == 1


def test_a_flow_wait_is_parked_and_resumed_by_correlation_id(connect):
    engine, bus = connect("engine"), connect("bus")
    envelope = {
        "tenant": "acme",
        "env": "prod",
        "provider": "slack",
        "channel": "C1",
        "conversation": "conv-3",
        "user": "U42",
        "pack": "billing",
        "flow": "refund",
    }
    parked = engine.park_flow_wait(envelope, {"node": "ask"}, "external_tool", ttl_seconds=600)
    assert parked.scope == "acme/prod" and parked.correlation_id.startswith("acme:slack:C1:conv-3:U42::pack=billing")
    resumed = bus.dispatch_resume("acme", "prod", parked.correlation_id, {"approved_by": "manager"})
    assert (resumed.admission.source, resumed.run_id, resumed.fresh) == ("dispatch", parked.run_id, True)
    started = engine.start(resumed)
    assert json.loads(started.input) == {"approved_by": "manager"}
    assert started.suspension.continuation["provenance"]["flow_snapshot"] == {"node": "ask"}
