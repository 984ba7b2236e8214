"""Early results (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"): kept before their pause,
and the one-shot resume they complete."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import Admission, EarlyResult, Event, Run, Start, Suspension
from suspensions.principals import Principal
from suspensions.services.early import early_digest
from tests.helpers import call, client, continuation, post, problem, refused, register, resume


def keep(c, run_id, call_id="c1", content="done", **extra):
    return post(c, f"/api/v1/runs/{run_id}/early-results", {"call_id": call_id, "content": content, **extra})


def suspend(c, run, pending=None, **extra):
    body = {
        "revision": run["revision"],
        "reason": "external_tool",
        "pending": pending or [call("c1")],
        "continuation": continuation(),
        **extra,
    }
    return post(c, f"/api/v1/runs/{run['id']}/suspend", body)


def kinds(run_id):
    return list(Event.objects.filter(run_id=run_id).order_by("id").values_list("kind", flat=True))


# -- keeping ------------------------------------------------------------------------------------


def test_an_early_result_is_kept_for_an_hour_by_default(engine):
    run = register(engine)
    response = keep(engine, run["id"], content={"rows": 1})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body.keys() == {"run_id", "call_id", "digest", "expires_at", "fresh"}
    assert (body["run_id"], body["call_id"], body["fresh"]) == (run["id"], "c1", True)
    row = EarlyResult.objects.get(run_id=run["id"])
    assert body["digest"] == row.digest == early_digest(run["id"], "c1", '{"rows":1}')
    assert row.expires_at - row.created_at == timedelta(hours=1)
    assert Run.objects.get(pk=run["id"]).has_early_results


def test_the_same_early_result_again_is_a_replay(engine):
    run = register(engine)
    first = keep(engine, run["id"], content=[1, 2]).json()
    again = keep(engine, run["id"], content=[1, 2])
    assert again.status_code == 200
    assert again.json() == {**first, "fresh": False}
    assert EarlyResult.objects.count() == 1


def test_another_content_for_the_same_call_is_an_admission_conflict_naming_both_digests(engine):
    run = register(engine)
    first = keep(engine, run["id"], content="a").json()
    body = refused(lambda: keep(engine, run["id"], content="b"), 409, "admission_conflict")
    assert body["admitted_digest"] == first["digest"]
    assert body["request_digest"] == early_digest(run["id"], "c1", '"b"')


@pytest.mark.parametrize("ttl", [0, -1, 7 * 86400 + 1, "60", None])
def test_a_ttl_outside_one_second_to_a_week_is_refused(engine, ttl):
    run = register(engine)
    refused(lambda: keep(engine, run["id"], ttl_seconds=ttl), 400, "invalid_request")


@pytest.mark.parametrize(
    "body",
    [{"call_id": "c1"}, {"content": 1}, {"call_id": "", "content": 1}, {"call_id": "x" * 201, "content": 1}, []],
)
def test_a_malformed_early_result_is_refused(engine, body):
    run = register(engine)
    refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/early-results", body), 400, "invalid_request")


def test_an_early_result_needs_the_engine_role_in_the_runs_scope(engine, token):
    run = register(engine)
    bus = client(token("acme", ["bus"], "bus"))
    other = client(token("other", ["engine"], "stranger"))
    refused(lambda: keep(bus, run["id"]), 403, "forbidden")
    refused(lambda: keep(other, run["id"]), 404, "not_found")


def test_a_finished_run_takes_no_early_result(engine):
    run = register(engine)
    post(engine, f"/api/v1/runs/{run['id']}/complete", {"revision": 1})
    refused(lambda: keep(engine, run["id"]), 409, "invalid_state")


def test_a_content_over_the_input_bound_is_refused(engine, settings):
    run = register(engine)
    oversized = "x" * settings.MAX_INPUT_BYTES  # its JSON encoding adds the quotes: two bytes over
    refused(lambda: keep(engine, run["id"], content=oversized), 413, "input_too_large")


def test_a_null_content_is_a_result_like_any_other(engine):
    run = register(engine)
    keep(engine, run["id"], content=None)
    answer = suspend(engine, run).json()
    assert answer["resume"]["results"] == [{"call_id": "c1", "content": None}]


# -- the pause they complete ----------------------------------------------------------------------


def test_a_pause_whose_calls_all_have_early_results_is_resumed_in_the_same_transaction(engine):
    run = register(engine)
    keep(engine, run["id"], "c2", {"b": 2})
    keep(engine, run["id"], "c1", {"a": 1})
    response = suspend(engine, run, [call("c1"), call("c2")])
    assert response.status_code == 201, response.content
    body = response.json()
    resumed = body["resume"]
    assert resumed["fresh"] is True and resumed["admission"]["fresh"] is True
    assert resumed["results"] == [{"call_id": "c1", "content": {"a": 1}}, {"call_id": "c2", "content": {"b": 2}}]
    assert resumed["suspension"]["id"] == body["id"] and resumed["start"]["suspension_id"] == body["id"]
    assert resumed["admission"]["version"] == {"run_id": run["id"], "suspension_id": body["id"], "run_revision": 2}
    assert (body["run_state"], body["run_revision"]) == ("paused", 2)  # the pause as stored: its claim version
    assert (resumed["run_state"], resumed["run_revision"]) == ("running", 3)
    assert Run.objects.get(pk=run["id"]).revision == 3
    assert kinds(run["id"]) == ["registered", "suspended", "admitted", "started"]
    assert not Suspension.objects.filter(run_id=run["id"]).exists()
    assert Admission.objects.get(run_id=run["id"]).source == "one_shot"
    assert {str(s) for s in EarlyResult.objects.values_list("suspension_id", flat=True)} == {body["id"]}


def test_the_engines_own_identical_resume_afterwards_is_a_replay(engine):
    run = register(engine)
    keep(engine, run["id"], content="done")
    pause_body = suspend(engine, run).json()
    again = resume(engine, pause_body, [{"call_id": "c1", "content": "done"}])
    assert again.status_code == 200, again.content
    assert again.json()["fresh"] is False
    assert again.json()["admission"]["id"] == pause_body["resume"]["admission"]["id"]
    other = resume(engine, pause_body, [{"call_id": "c1", "content": "else"}])
    problem(other, 409, "admission_conflict")


def test_a_partial_match_waits_and_the_last_missing_result_resumes_the_live_pause(engine):
    run = register(engine)
    keep(engine, run["id"], "c1", 1)
    paused = suspend(engine, run, [call("c1"), call("c2")]).json()
    assert "resume" not in paused and paused["run_state"] == "paused"
    last = keep(engine, run["id"], "c2", 2)
    assert last.status_code == 201
    resumed = last.json()["resume"]
    assert resumed["results"] == [{"call_id": "c1", "content": 1}, {"call_id": "c2", "content": 2}]
    assert resumed["admission"]["version"]["suspension_id"] == paused["id"]
    assert Run.objects.get(pk=run["id"]).state == "running"
    assert kinds(run["id"]) == ["registered", "suspended", "admitted", "started"]


def test_a_result_for_a_call_the_live_pause_does_not_wait_for_is_only_kept(engine):
    run = register(engine)
    suspend(engine, run)
    kept = keep(engine, run["id"], "c9", 1)
    assert kept.status_code == 201 and "resume" not in kept.json()
    assert Run.objects.get(pk=run["id"]).state == "paused"


def test_early_results_never_resume_other_reasons(engine):
    run = register(engine)
    keep(engine, run["id"], "c1", 1)
    body = {"revision": 1, "reason": "approval", "pending": [call("c1")], "continuation": continuation()}
    answer = post(engine, f"/api/v1/runs/{run['id']}/suspend", body).json()
    assert "resume" not in answer and answer["run_state"] == "paused"


def test_an_expired_early_result_is_not_used_and_may_be_kept_again(engine):
    run = register(engine)
    keep(engine, run["id"], content="old")
    EarlyResult.objects.update(expires_at=db_now() - timedelta(seconds=1))
    assert "resume" not in suspend(engine, run).json()
    fresh = keep(engine, run["id"], content="new")
    assert fresh.status_code == 201
    assert fresh.json()["resume"]["results"] == [{"call_id": "c1", "content": "new"}]
    assert EarlyResult.objects.get().digest == early_digest(run["id"], "c1", '"new"')


def test_used_results_are_not_used_again_by_a_later_pause(engine):
    run = register(engine)
    keep(engine, run["id"], content="done")
    first = suspend(engine, run).json()
    later = suspend(engine, {"id": run["id"], "revision": first["resume"]["run_revision"]}).json()
    assert "resume" not in later and later["run_state"] == "paused"


def test_the_sweep_deletes_early_results_past_their_ttl(engine):
    run = register(engine)
    keep(engine, run["id"], "c1", 1, ttl_seconds=60)
    keep(engine, run["id"], "c2", 2)
    result = services.expire_suspensions(now=db_now() + timedelta(minutes=2))
    assert result.early_results_dropped == 1
    assert list(EarlyResult.objects.values_list("call_id", flat=True)) == ["c2"]


# -- the run's allowance, and its end (issue 50 item 9) --------------------------------------------


def test_an_early_result_past_the_runs_count_is_429_with_retry_after_and_writes_nothing(engine, settings):
    settings.EARLY_RESULTS_PER_RUN = 2
    run = register(engine)
    keep(engine, run["id"], "c1", 1)
    keep(engine, run["id"], "c2", 2, ttl_seconds=600)
    response = keep(engine, run["id"], "c3", 3)
    refused(lambda: response, 429, "throttled")
    assert 0 < int(response["Retry-After"]) <= 600  # until the first of them expires
    assert sorted(EarlyResult.objects.values_list("call_id", flat=True)) == ["c1", "c2"]


def test_early_results_past_the_runs_bytes_are_413_and_write_nothing(engine, settings):
    settings.EARLY_RESULT_BYTES_PER_RUN = 100
    run = register(engine)
    keep(engine, run["id"], "c1", "x" * 60)  # 62 bytes with its quotes
    body = refused(lambda: keep(engine, run["id"], "c2", "y" * 40), 413, "input_too_large")
    assert "EARLY_RESULT_BYTES_PER_RUN" in body["detail"]
    assert keep(engine, run["id"], "c2", "y" * 30).status_code == 201  # 32 bytes: 94 in all


def test_at_the_allowance_the_same_result_again_still_replays_and_an_expired_one_makes_room(engine, settings):
    settings.EARLY_RESULTS_PER_RUN = 1
    run = register(engine)
    keep(engine, run["id"], "c1", 1)
    assert keep(engine, run["id"], "c1", 1).status_code == 200
    EarlyResult.objects.update(expires_at=db_now() - timedelta(seconds=1))
    assert keep(engine, run["id"], "c2", 2).status_code == 201


@pytest.mark.parametrize("end", ["complete", "fail", "cancel"])
def test_the_sweep_deletes_the_early_results_of_a_run_that_ended_and_keeps_a_live_runs(engine, end):
    ended, live = register(engine), register(engine)
    keep(engine, ended["id"], "c1", 1, ttl_seconds=7 * 86400)
    keep(engine, live["id"], "c1", 1, ttl_seconds=7 * 86400)
    body = {"revision": 1, **({"error": "boom"} if end == "fail" else {})}
    assert post(engine, f"/api/v1/runs/{ended['id']}/{end}", body).status_code == 200
    assert services.expire_suspensions().early_results_dropped == 1
    assert [str(r) for r in EarlyResult.objects.values_list("run_id", flat=True)] == [live["id"]]


def test_the_sweep_deletes_the_early_results_of_a_run_it_expires_on_its_next_pass(engine):
    run = register(engine)
    keep(engine, run["id"], "other", 1, ttl_seconds=7 * 86400)
    suspend(engine, run, ttl_seconds=60)
    later = db_now() + timedelta(minutes=2)
    assert services.expire_suspensions(now=later).expired == 1
    assert services.expire_suspensions(now=later).early_results_dropped == 1
    assert not EarlyResult.objects.exists()


# -- what it costs a pause that has none ----------------------------------------------------------

ENGINE = Principal(name="token:engine", grants=(("acme", frozenset({"engine"})),))


def statements(queries):
    """What reached PostgreSQL, without the test transaction's savepoints around each service call."""
    return [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


PAUSE = {"revision": 1, "reason": "external_tool", "pending": [call("c1")], "continuation": continuation()}


def test_a_pause_of_a_run_without_early_results_adds_no_statement(engine):
    run = register(engine)
    with CaptureQueriesContext(connection) as queries:
        services.suspend_run(principal=ENGINE, run_id=run["id"], **PAUSE)
    # The run lock (with the pause and the clock) and the transition's writes, in one round trip each.
    locked, written = statements(queries)
    assert "FOR NO KEY UPDATE" in locked and written.startswith("INSERT INTO")


def test_a_pause_of_a_run_with_early_results_looks_them_up_once(engine):
    run = register(engine)
    keep(engine, run["id"], "other", 1)
    with CaptureQueriesContext(connection) as queries:
        services.suspend_run(principal=ENGINE, run_id=run["id"], **PAUSE)
    assert ["suspensions_earlyresult" in sql for sql in statements(queries)] == [False, True, False]


def test_a_pause_resumed_by_its_early_results_is_one_lock_one_look_up_and_one_write(engine):
    run = register(engine)
    keep(engine, run["id"], "c1", 1)
    with CaptureQueriesContext(connection) as queries:
        paused = services.pause_run(principal=ENGINE, run_id=run["id"], **PAUSE)
    assert len(statements(queries)) == 3
    assert paused.resume is not None and Start.objects.filter(run_id=run["id"]).count() == 1
