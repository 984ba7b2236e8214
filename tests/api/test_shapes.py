"""Each answer body is declared once (suspensions/wire): the model builds the answer and is its schema.

The schema of every operation is generated from these models, and
tests/api/test_openapi.py holds every live answer to it, strictly. Here: the
schema's components are the models' fields in the models' order, a real
answer writes them in that order with the time formats this API always
wrote, and no answer is built from a value its model does not declare.
"""

import json
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest
from drf_spectacular.generators import SchemaGenerator
from pydantic import MISSING

from suspensions.models import ClosureReceipt, ExpiryReceipt, Run, Suspension
from suspensions.wire import answers, answers_audit, answers_operators
from suspensions.wire.answers import Answer
from tests.helpers import call, client, pause, post, register, resume, version

SCHEMA = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
MICROSECONDS = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$"


def models() -> Iterator[type[Answer]]:
    for module in (answers, answers_operators, answers_audit):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Answer) and value is not Answer:
                yield value


def written(model: type[Answer]) -> list[str]:
    # A field named after a Python keyword is written by its alias (DelegationOut's `from`).
    return [field.serialization_alias or name for name, field in model.model_fields.items()]


def always(model: type[Answer]) -> set[str]:
    return {
        field.serialization_alias or name for name, field in model.model_fields.items() if field.default is not MISSING
    }


@pytest.fixture
def strictly() -> Iterator[None]:
    """A value of another type than its field declares warns at serialization (pydantic): here it fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# -- the declaration is the schema ---------------------------------------------------------------


# DecisionHeadOut is only the head DeniedOut and VotedOut share.
ANSWERED = [model for model in models() if model is not answers.DecisionHeadOut]


@pytest.mark.parametrize("model", ANSWERED, ids=lambda m: m.__name__)
def test_each_answer_component_is_its_model_field_for_field_in_order(model):
    component = SCHEMA[model.__name__]
    assert list(component["properties"]) == written(model)
    assert set(component["required"]) == always(model)


def test_every_answer_model_is_in_the_schema():
    # A model no operation answers would be a declaration nobody reads.
    assert {m.__name__ for m in ANSWERED} - set(SCHEMA) == set()


# -- real answers, key for key ---------------------------------------------------------------


def test_a_one_shot_resume_writes_its_declared_keys_in_order_and_leaves_out_what_does_not_apply(engine, strictly):
    body = resume(engine, pause(engine)).json()
    assert list(body) == ["run_id", "run_revision", "run_state", "admission", "start", "fresh", "suspension", "results"]
    assert list(body["admission"]) == written(answers.AdmissionReceiptOut)
    assert list(body["start"]) == written(answers.StartReceiptOut)
    # The pause a claim carries is the pause as stored: without where its run is now.
    assert list(body["suspension"]) == [
        k for k in written(answers.SuspensionOut) if k not in ("run_revision", "run_state")
    ]
    assert body["results"] == [{"call_id": "c1", "content": "done"}]
    for receipt, moment in ((body["admission"], "admitted_at"), (body["start"], "started_at")):
        assert receipt[moment] is not None and len(receipt[moment]) == len("2026-01-01T00:00:00.000000Z")
        assert receipt["valid"] is True


def test_a_pause_writes_its_calls_and_continuation_as_stored(engine, strictly):
    s = pause(engine, pending=[call("c1", "refund", '{"b": 1, "a": 2}')])
    stored = Suspension.objects.get(pk=s["id"])
    assert json.dumps(s["pending"]) == json.dumps(json.loads(stored.pending))
    assert s["pending"][0]["arguments"] == '{"b": 1, "a": 2}'
    kept = json.loads(stored.continuation)
    kept["config"].setdefault("tools_restricted", False)  # RunConfig's absent tools_restricted reads as false
    assert json.dumps(s["continuation"]) == json.dumps(kept)
    assert list(s)[-2:] == ["run_revision", "run_state"]
    assert "callback_url" not in s and "resume" not in s
    listed = engine.get("/api/v1/suspensions").json()["results"]
    assert [list(row) for row in listed] == [written(answers.SuspensionSummaryOut)]


def test_an_approval_a_vote_and_a_denial_write_their_declared_keys(engine, token, strictly):
    approver = client(token("acme", ["approver"], "approver"))
    second = client(token("acme", ["approver"], "approver-2"))
    operator = client(token("acme", ["operator"], "operator"))
    assert post(operator, "/api/v1/approval-floors", {"scope": "acme", "quorum": 2}).status_code == 201
    susp = pause(engine, reason="approval")
    shown = approver.get(f"/api/v1/approvals/{susp['id']}").json()
    assert list(shown) == written(answers.ApprovalOut)
    assert list(shown["calls"][0]) == written(answers.AskedCallOut)
    assert shown["version"] == version(susp) and shown["final_calls"] is None and shown["response"] is None
    voted = post(approver, f"/api/v1/approvals/{susp['id']}/decide", {"version": version(susp), "decision": "approve"})
    assert voted.status_code == 202, voted.content
    assert list(voted.json()) == written(answers.VotedOut)
    assert voted.json()["votes"] == 1 and voted.json()["quorum"] == 2
    denied = post(second, f"/api/v1/approvals/{susp['id']}/decide", {**voted_away(susp), "reason": "no"})
    assert denied.status_code == 201, denied.content
    assert list(denied.json()) == written(answers.DeniedOut)
    assert denied.json()["reason"] == "no"


def voted_away(susp: dict[str, Any]) -> dict[str, Any]:
    return {"version": version(susp), "decision": "deny"}


def test_a_refusal_writes_the_problem_head_then_what_it_carries_as_the_error_gave_it(engine):
    s = pause(engine)
    answer = resume(engine, s, [{"call_id": "c9", "content": 1}])
    assert answer.status_code == 422, answer.content
    body = answer.json()
    assert list(body) == ["type", "title", "status", "detail", "code", "unknown", "missing"]
    assert (body["code"], body["unknown"], body["missing"]) == ("results_mismatch", ["c9"], ["c1"])


# -- the time formats --------------------------------------------------------------------------


def test_the_receipts_write_six_digit_microseconds_and_check_their_digests(strictly):
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ids = {"run_id": UUID("00000000-0000-7000-8000-000000000001"), "suspension_id": UUID(int=2)}
    expiry = ExpiryReceipt(**ids, scope="acme", request_digest="", run_revision=3, expired_at=now, digest="d")
    body = answers.ExpiryReceiptOut.of(expiry).wire()
    assert list(body) == written(answers.ExpiryReceiptOut)
    assert body["expired_at"] == "2026-01-01T00:00:00.000000Z"
    assert body["run_id"] == "00000000-0000-7000-8000-000000000001"
    assert body["valid"] is False  # "d" is not the digest of what is stored
    closure = ClosureReceipt(
        **ids,
        scope="acme",
        request=json.dumps({"b": 1, "a": 2}),
        request_digest="r",
        run_revision=4,
        actor="token:op",
        digest="d",
        closed_at=now,
    )
    body = answers.ClosureReceiptOut.of(closure, fresh=True).wire()
    assert list(body) == written(answers.ClosureReceiptOut)
    assert list(body["request"]) == ["b", "a"]  # as retained
    assert (body["closed_at"], body["fresh"], body["valid"]) == ("2026-01-01T00:00:00.000000Z", True, False)


def as_drf_wrote(run: Any) -> dict[str, Any]:
    """A run as DRF's fields rendered it before the model (the UUID, the times in DRF's DateTimeField format)."""
    from rest_framework import serializers

    time = serializers.DateTimeField()
    suspension = getattr(run, "live_suspension_id", None)
    return {
        "id": str(run.id),
        **{name: getattr(run, name) for name in ("scope", "agent_id", "session_id", "state", "revision")},
        **{name: getattr(run, name) for name in ("error", "last_reason")},
        "tags": list(run.tags),
        "created_at": time.to_representation(run.created_at),
        "updated_at": time.to_representation(run.updated_at),
        "suspension_id": None if suspension is None else str(suspension),
    }


def test_a_run_writes_its_times_as_drf_did_in_every_state(engine, strictly):
    from django.db.models import F

    registered = register(engine)
    assert registered == as_drf_wrote(Run.objects.get(pk=registered["id"]))
    paused = pause(engine)
    failed = register(engine, agent_id="agent-2")
    answer = post(engine, f"/api/v1/runs/{failed['id']}/fail", {"revision": 1, "error": "the tool timed out"})
    assert answer.status_code == 200
    assert answer.json()["error"] == "the tool timed out"
    # A time with no microseconds is written without them, as DRF's DateTimeField writes it.
    Run.objects.filter(pk=failed["id"]).update(created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    rows = Run.objects.annotate(live_suspension_id=F("suspension__id"))
    assert rows.count() == 3
    for run in rows:
        assert answers.RunOut.of(run).wire() == as_drf_wrote(run)
        assert engine.get(f"/api/v1/runs/{run.id}").json() == as_drf_wrote(run)
    by_id = {str(run.id): run for run in rows}
    assert answers.RunOut.of(by_id[failed["id"]]).wire()["created_at"] == "2026-01-02T03:04:05Z"
    assert answers.RunOut.of(by_id[paused["run_id"]]).wire()["suspension_id"] == paused["id"]
    assert list(registered) == written(answers.RunOut)
