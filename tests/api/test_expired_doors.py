"""A pause past its deadline is `410 suspension_expired` at every resume-side door, swept or not (docs/api.md §4).

Issue 50 item 14: before the sweep ran, a late resume met the deadline check
(410); after it, the run was `expired` and the claim path answered
`409 not_suspended`. Each door is tried both ways: with the pause past its
deadline and the sweep not yet run, and after a real sweep
(services.expire_suspensions). Nothing is written by the refusal.
"""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from suspensions import services
from suspensions.clock import db_now
from suspensions.exceptions import SuspensionExpired
from suspensions.models import Run, RunState, Suspension
from suspensions.principals import Principal
from suspensions.services.claims import Version
from tests.helpers import call, client, continuation, envelope, pause, post, refused, register, resume, version

pytestmark = pytest.mark.usefixtures("chains_intact")

RESULTS = [{"call_id": "c1", "content": "done"}]


@pytest.fixture
def approver(db, token):
    return client(token("acme", ["approver"], "alice"))


@pytest.fixture
def bus(db, token):
    return client(token("acme", ["bus"], "bus"))


def past_deadline(run_id, swept):
    """Move the run's pause past its deadline; with `swept`, run the real sweep over it."""
    past = db_now() - timedelta(seconds=1)
    Suspension.objects.filter(run_id=run_id).update(expires_at=past, deadline=past)
    if swept:
        assert services.expire_suspensions().expired == 1
        assert Run.objects.get(pk=run_id).state == RunState.EXPIRED


def tool_pause(engine):
    run = register(engine)
    body = {"revision": 1, "reason": "external_tool", "pending": [call("c1")], "continuation": continuation()}
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", {**body, "callback": True})
    assert response.status_code == 201, response.content
    return response.json()


def reply_pause(engine):
    cont = continuation(config={"model": "m-1", "tools": ["ask"], "tools_restricted": False})
    return pause(engine, reason="agent_reply", cont=cont)


def decide(approver, s, decision, **extra):
    body = {"version": version(s), "decision": decision, **extra}
    return post(approver, f"/api/v1/approvals/{s['id']}/decide", body)


def admit(bus, s):
    body = {"version": version(s), "input": '{"answer": 42}', "reply_with": "q-1"}
    return post(bus, f"/api/v1/runs/{s['run_id']}/admissions", body)


# Each door: (how to store its pause, how to knock once the pause is past its deadline).
DOORS = {
    "one-shot resume": (tool_pause, lambda c, s: resume(c["engine"], s, RESULTS)),
    "callback URL": (
        tool_pause,
        lambda c, s: post(APIClient(), s["callback_url"], {"version": version(s), "results": RESULTS}),
    ),
    "cancel": (
        tool_pause,
        lambda c, s: post(c["engine"], f"/api/v1/runs/{s['run_id']}/cancel", {"revision": s["run_revision"]}),
    ),
    "approve": (lambda e: pause(e, reason="approval"), lambda c, s: decide(c["approver"], s, "approve")),
    "deny": (lambda e: pause(e, reason="approval"), lambda c, s: decide(c["approver"], s, "deny", reason="no")),
    "respond": (lambda e: pause(e, reason="approval"), lambda c, s: decide(c["approver"], s, "respond", response="r")),
    "admit": (reply_pause, lambda c, s: admit(c["bus"], s)),
}


@pytest.mark.parametrize("swept", [False, True], ids=["before the sweep", "after the sweep"])
@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_pause_past_its_deadline_is_410_at_every_door_whether_or_not_the_sweep_ran(
    engine, approver, bus, door, swept
):
    store, knock = DOORS[door]
    s = store(engine)
    past_deadline(s["run_id"], swept)
    refused(lambda: knock({"engine": engine, "approver": approver, "bus": bus}, s), 410, "suspension_expired")


@pytest.mark.parametrize("swept", [False, True], ids=["before the sweep", "after the sweep"])
def test_a_dispatch_resume_of_a_flow_wait_past_its_deadline_is_410_whether_or_not_the_sweep_ran(engine, bus, swept):
    parked = post(engine, "/api/v1/flow-waits", {"envelope": envelope(), "snapshot": {"n": 1}, "reason": "agent_reply"})
    assert parked.status_code == 201, parked.content
    past_deadline(parked.json()["run_id"], swept)
    body = {"tenant": "acme", "env": "prod", "correlation_id": parked.json()["correlation_id"], "output": {"a": 1}}
    refused(lambda: post(bus, "/api/v1/dispatch/resume", body), 410, "suspension_expired")


@pytest.mark.parametrize("swept", [False, True], ids=["before the sweep", "after the sweep"])
def test_a_start_of_an_admission_past_its_deadline_is_410_whether_or_not_the_sweep_ran(engine, bus, swept):
    s = reply_pause(engine)
    admitted = admit(bus, s).json()
    Suspension.objects.filter(run_id=s["run_id"]).update(expires_at=db_now() - timedelta(seconds=1))
    if swept:
        services.expire_suspensions()
    start = f"/api/v1/admissions/{admitted['admission']['id']}/start"
    refused(lambda: post(engine, start, {}), 410, "suspension_expired")


@pytest.mark.parametrize("decision", ["approve", "deny", "respond"])
def test_the_decide_the_console_slack_and_email_links_share_is_410_after_the_sweep(engine, decision):
    s = pause(engine, reason="approval")
    past_deadline(s["run_id"], swept=True)
    alice = Principal(name="alice", grants=(("acme", frozenset({"approver"})),))
    v = Version(run_id=s["run_id"], suspension_id=s["id"], run_revision=s["run_revision"])
    with pytest.raises(SuspensionExpired):
        services.decide(principal=alice, suspension_id=s["id"], version=v, decision=decision, reason="r", response="r")


def test_a_resume_naming_another_pause_of_an_expired_run_is_still_not_suspended(engine):
    s = tool_pause(engine)
    past_deadline(s["run_id"], swept=True)
    other = {**s, "id": "01a22e4f-351f-71a9-8405-e222bcbd535d"}
    refused(lambda: resume(engine, other, RESULTS), 409, "not_suspended")
