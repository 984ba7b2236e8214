"""Tags on runs and pauses (docs/api.md, "`POST /runs` — register (T1)"): given at register, pause and park; shown,
filtered on, announced.

A pause carries its run's tags, then its own; `?tag=` (repeatable) keeps the
rows carrying every tag named. A bad tag list is 400 and writes nothing.
"""

from datetime import timedelta

import pytest

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import OutboxEvent, Run, Suspension
from suspensions.presenters import slack_text
from tests.factories import principal
from tests.helpers import call, client, continuation, envelope, post, refused, version

RUNS = "/api/v1/runs"


def register(c, tags, agent_id="a1"):
    response = post(c, RUNS, {"agent_id": agent_id, "tags": tags})
    assert response.status_code == 201, response.content
    return response.json()


def pause(c, run, tags=None, reason="approval"):
    body = {"revision": run["revision"], "reason": reason, "pending": [call()], "continuation": continuation()}
    if tags is not None:
        body["tags"] = tags
    response = post(c, f"{RUNS}/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def ids(response):
    assert response.status_code == 200, response.content
    return sorted(row["id"] for row in response.json()["results"])


@pytest.fixture
def approver(db, token):
    return client(token("acme", ["approver"], "approver"))


# -- given and shown ------------------------------------------------------------------------------


def test_a_run_keeps_its_tags_and_shows_them_in_every_answer(engine):
    run = register(engine, ["team:billing", "env.prod"])
    assert run["tags"] == ["team:billing", "env.prod"]
    assert engine.get(f"{RUNS}/{run['id']}").json()["tags"] == ["team:billing", "env.prod"]
    assert Run.objects.get().tags == ["team:billing", "env.prod"]


def test_a_pause_carries_its_runs_tags_then_its_own_in_pause_list_and_approval_answers(engine, approver):
    run = register(engine, ["team:billing"])
    s = pause(engine, run, ["refund", "team:billing"])
    assert s["tags"] == ["team:billing", "refund"]
    assert engine.get(f"/api/v1/suspensions/{s['id']}").json()["tags"] == ["team:billing", "refund"]
    assert [row["tags"] for row in approver.get("/api/v1/approvals").json()["results"]] == [["team:billing", "refund"]]
    assert approver.get(f"/api/v1/approvals/{s['id']}").json()["tags"] == ["team:billing", "refund"]


def test_a_decided_approval_keeps_its_tags_after_the_pause_is_gone(engine, approver):
    s = pause(engine, register(engine, ["t1"]), ["t2"])
    post(approver, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "deny", "reason": "no"})
    assert not Suspension.objects.exists()
    assert approver.get(f"/api/v1/approvals/{s['id']}").json()["tags"] == ["t1", "t2"]


def test_without_tags_every_answer_shows_an_empty_list(engine):
    s = pause(engine, register(engine, []), None, reason="external_tool")
    assert (s["tags"], engine.get(f"{RUNS}/{s['run_id']}").json()["tags"]) == ([], [])


def test_a_parked_flow_wait_tags_its_run_and_pause(engine):
    body = {"envelope": envelope(), "snapshot": {"step": 1}, "reason": "external_tool", "tags": ["flow:refund"]}
    assert post(engine, "/api/v1/flow-waits", body).status_code == 201
    assert (Run.objects.get().tags, Suspension.objects.get().tags) == (["flow:refund"], ["flow:refund"])


# -- refused --------------------------------------------------------------------------------------


BAD = [
    ["Upper"],
    ["with space"],
    [""],
    ["x" * 65],
    ["slash/no"],
    [f"t{n}" for n in range(11)],
    ["dup", "dup"],
    [1],
    "not-a-list",
    None,
]


@pytest.mark.parametrize("tags", BAD, ids=repr)
def test_a_bad_tag_list_at_register_is_400_naming_tags_and_writes_nothing(engine, tags):
    body = refused(lambda: post(engine, RUNS, {"agent_id": "a1", "tags": tags}), 400, "invalid_request")
    assert list(body["errors"]) == ["tags"]


@pytest.mark.parametrize("tags", BAD, ids=repr)
def test_a_bad_tag_list_at_pause_is_400_naming_tags_and_writes_nothing(engine, tags):
    run = register(engine, [])
    body = {"revision": 1, "reason": "approval", "pending": [call()], "continuation": continuation(), "tags": tags}
    problem = refused(lambda: post(engine, f"{RUNS}/{run['id']}/suspend", body), 400, "invalid_request")
    assert list(problem["errors"]) == ["tags"]


def test_ten_tags_of_64_characters_are_accepted(engine):
    tags = [f"{n}" + "a" * 63 for n in range(10)]
    assert register(engine, tags)["tags"] == tags


# -- filtered -------------------------------------------------------------------------------------


def test_runs_filter_by_tag_and_every_tag_named_must_be_present(engine):
    both = register(engine, ["a", "b"])["id"]
    only_a = register(engine, ["a"])["id"]
    register(engine, ["c"])
    assert ids(engine.get(RUNS, {"tag": "a"})) == sorted([both, only_a])
    assert ids(engine.get(f"{RUNS}?tag=a&tag=b")) == [both]
    assert ids(engine.get(f"{RUNS}?tag=zzz")) == []
    assert len(ids(engine.get(f"{RUNS}?tag="))) == 3  # an empty filter is no filter


def test_suspensions_and_approvals_filter_by_the_pauses_tags_including_its_runs(engine, approver):
    first = pause(engine, register(engine, ["team:a"]), ["urgent"])
    second = pause(engine, register(engine, ["team:a"]), [])
    assert ids(engine.get("/api/v1/suspensions?tag=team:a")) == sorted([first["id"], second["id"]])
    assert ids(engine.get("/api/v1/suspensions?tag=team:a&tag=urgent")) == [first["id"]]
    assert ids(approver.get("/api/v1/approvals?tag=urgent")) == [first["id"]]


def test_a_bad_tag_filter_is_400(engine):
    refused(lambda: engine.get(RUNS, {"tag": "NOPE"}), 400, "invalid_request")


def test_the_tag_filter_costs_no_query_more_than_any_filter(engine, django_assert_max_num_queries):
    for n in range(5):
        register(engine, ["a", f"n{n}"])
    with django_assert_max_num_queries(3):  # the token, the page
        assert len(ids(engine.get(f"{RUNS}?tag=a"))) == 5


# -- announced ------------------------------------------------------------------------------------


def test_webhooks_of_a_tagged_pause_carry_its_tags_from_request_to_decision(engine, approver):
    s = pause(engine, register(engine, ["team:a"]), ["refund"])
    post(approver, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})
    announced = {e.type: e.data.get("tags") for e in OutboxEvent.objects.all()}
    assert announced == {
        "approval.requested": ["team:a", "refund"],
        "approval.decided": ["team:a", "refund"],
        "admission.created": ["team:a", "refund"],
    }


def test_a_finished_run_announces_its_own_tags_and_an_untagged_one_no_tags_key(engine):
    tagged, plain = register(engine, ["team:a"]), register(engine, [], agent_id="a2")
    for run in (tagged, plain):
        assert post(engine, f"{RUNS}/{run['id']}/complete", {"revision": 1}).status_code == 200
    data = {str(e.run_id): e.data for e in OutboxEvent.objects.filter(type="run.finished")}
    assert data[tagged["id"]]["tags"] == ["team:a"]
    assert "tags" not in data[plain["id"]]


def test_the_sweep_announces_an_expired_pauses_tags(db):
    engine = principal("token:engine", "acme")
    run = services.register_run(principal=engine, agent_id="a1", scope="acme", tags=["team:a"])
    services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=1,
        reason="external_tool",
        pending=[call()],
        continuation=continuation(),
        ttl_seconds=60,
        tags=["late"],
    )
    Suspension.objects.update(expires_at=db_now() - timedelta(seconds=1))
    services.expire_suspensions()
    assert OutboxEvent.objects.get(type="suspension.expired").data["tags"] == ["team:a", "late"]


def test_slack_text_names_the_tags(engine):
    pause(engine, register(engine, ["team:a"]), ["refund"])
    assert "Tags: team:a, refund." in slack_text(OutboxEvent.objects.get(type="approval.requested"))


# -- the console inbox ----------------------------------------------------------------------------


def test_the_console_inbox_filters_by_tag_and_shows_tags_as_chips_that_filter(engine, db):
    from django.test import Client

    from tests.helpers import member

    tagged = pause(engine, register(engine, ["team:a"]), ["refund"])
    pause(engine, register(engine, ["team:b"]))
    console = Client()
    console.force_login(member("alice", {"acme": ["approver"]}, is_staff=True))
    page = console.get("/console/approvals/?tag=refund")
    assert [row["id"] for row in page.context["rows"]] == [tagged["id"]]
    html = page.content.decode()
    assert 'name="tag" value="refund"' in html
    assert 'href="/console/approvals/?tag=team%3Aa"' in html and ">refund</a>" in html
    assert console.get("/console/approvals/?tag=Bad Tag").context["filter_errors"]
