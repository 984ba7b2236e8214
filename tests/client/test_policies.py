"""Approval policies through the client (docs/policies.md): edited arguments, respond, quorum votes, separation of
duties."""

from pathlib import Path

import pytest
from suspensions_client import (
    ArgumentsInvalid,
    Claimed,
    NotEditable,
    SeparationOfDuties,
    Vote,
    VoteMismatch,
    WaitTimeout,
)

from suspensions.models import Admission, ApprovalVote, Run

from .conftest import cont

SERVICE = Path(__file__).resolve().parents[2] / "suspensions" / "services" / "approvals.py"
pytestmark = pytest.mark.skipif(
    "respond" not in SERVICE.read_text(), reason="the server has no approval policies yet (docs/policies.md)"
)

SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 1000}},
    "required": ["amount"],
    "additionalProperties": False,
}


def refund(call_id="c1", amount=900, **extra):
    return {"id": call_id, "name": "refund", "arguments": f'{{"amount": {amount}}}', **extra}


def test_an_approver_edits_an_editable_call_within_its_schema_and_the_start_carries_the_edit(engine, approver):
    calls = [refund(editable=True, arguments_schema=SCHEMA), refund("c2", 10)]
    pause = engine.pause_for_approval(engine.register("a"), calls, cont())
    assert pause.pending[0].editable and pause.pending[0].arguments_schema == SCHEMA and not pause.pending[1].editable
    edited = approver.decide(pause.id, pause.version, calls=[{"id": "c1", "arguments": '{"amount": 400}'}])
    assert isinstance(edited, Claimed) and edited.fresh
    started = engine.start(engine.wait_for_admission(pause.run_id, pause.id, timeout=30, poll_interval=0.1))
    final = {c["id"]: (c["arguments"], c["edited"]) for c in started.input_json()["calls"]}
    assert final == {"c1": ('{"amount": 400}', True), "c2": ('{"amount": 10}', False)}
    assert approver.get_approval(pause.id).final_calls[0]["arguments"] == '{"amount": 400}'


def test_edits_outside_the_schema_or_of_a_locked_call_are_refused_with_their_classes(engine, approver):
    calls = [refund(editable=True, arguments_schema=SCHEMA), refund("c2", 10)]
    pause = engine.pause_for_approval(engine.register("a"), calls, cont())
    with pytest.raises(ArgumentsInvalid) as invalid:
        approver.decide(pause.id, pause.version, calls=[{"id": "c1", "arguments": '{"amount": 5000}'}])
    assert invalid.value.status == 422 and "c1" in str(invalid.value.errors)
    with pytest.raises(NotEditable) as locked:
        approver.decide(pause.id, pause.version, calls=[{"id": "c2", "arguments": '{"amount": 20}'}])
    assert locked.value.status == 403
    assert (Run.objects.get(pk=pause.run_id).state, Admission.objects.count()) == ("paused", 0)


def test_a_respond_admits_the_approvers_words_as_the_input(engine, approver):
    pause = engine.pause_for_approval(engine.register("a"), [refund()], cont())
    answered = approver.decide(pause.id, pause.version, "respond", response="Offer a voucher instead.")
    assert isinstance(answered, Claimed)
    outcome = engine.wait_for_admission(pause.run_id, pause.id, timeout=30, poll_interval=0.1)
    started = engine.start(outcome)
    assert started.input_json()["decision"] == "respond"
    assert started.input_json()["response"] == "Offer a voucher instead."


def test_a_quorum_of_two_answers_a_vote_first_and_admits_at_the_second(connect, engine):
    first, second = connect("approver", name="first-approver"), connect("approver", name="second-approver")
    pause = engine.pause_for_approval(engine.register("a"), [refund(editable=True)], cont(), approval={"quorum": 2})
    vote = first.decide(pause.id, pause.version)
    assert isinstance(vote, Vote) and (vote.votes, vote.quorum, vote.fresh) == (1, 2, True)
    assert first.decide(pause.id, pause.version).fresh is False  # the same vote again: a replay
    with pytest.raises(WaitTimeout):
        engine.wait_for_admission(pause.run_id, pause.id, timeout=0.3, poll_interval=0.1)  # a vote admits nothing
    with pytest.raises(VoteMismatch):
        second.decide(pause.id, pause.version, calls=[{"id": "c1", "arguments": '{"amount": 1}'}])
    asked = first.get_approval(pause.id)
    assert asked.policy == {"quorum": 2, "exclude_requester": True, "on_expiry": "expire"}
    assert [v["voter"] for v in asked.votes] == ["token:first-approver"]
    admitted = second.decide(pause.id, pause.version)
    assert isinstance(admitted, Claimed) and admitted.fresh
    outcome = engine.wait_for_admission(pause.run_id, pause.id, timeout=30, poll_interval=0.1)
    assert engine.start(outcome).input_json()["approvers"] == ["token:first-approver", "token:second-approver"]
    assert ApprovalVote.objects.filter(suspension_id=pause.id).count() == 2


def test_the_requester_may_not_approve_its_own_pause_when_the_policy_excludes_it(connect):
    both = connect("engine", "approver", name="engine-and-approver")
    pause = both.pause_for_approval(both.register("a", scope="acme"), [refund()], cont(), approval={})
    with pytest.raises(SeparationOfDuties) as refused:
        both.decide(pause.id, pause.version)
    assert refused.value.status == 403
    assert (Run.objects.get(pk=pause.run_id).state, ApprovalVote.objects.count()) == ("paused", 0)
    assert isinstance(connect("approver").decide(pause.id, pause.version), Claimed)
