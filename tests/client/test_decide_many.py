"""A list of decisions through the client (docs/api.md, "`POST /approvals/decide`: a list of decisions"): one result
per item, a refusal carried rather than raised, a malformed list raised and nothing decided."""

import pytest
from suspensions_client import Claimed, DecisionResult, Denial, InvalidRequest, NotSuspended

from suspensions.models import Approval

from .conftest import cont, pending


def test_decide_many_returns_each_items_decision_or_its_refusal_in_order(engine, approver, connect):
    first, second, taken = (engine.pause_for_approval(engine.register("a"), [pending()], cont()) for _ in range(3))
    connect("approver").decide(taken.id, taken.version, "deny", reason="mine")
    results = approver.decide_many(
        [
            {"approval_id": first.id, "version": first.version, "decision": "approve", "reason": "ok"},
            {"approval_id": taken.id, "version": taken.version, "decision": "approve"},
            {"approval_id": second.id, "version": second.version, "decision": "deny", "reason": "no"},
        ]
    )
    assert all(isinstance(r, DecisionResult) for r in results)
    assert [(r.approval_id, r.status) for r in results] == [(first.id, 201), (taken.id, 409), (second.id, 201)]
    assert isinstance(results[0].decision, Claimed) and results[0].error is None
    assert isinstance(results[1].error, NotSuspended) and results[1].decision is None
    assert isinstance(results[2].decision, Denial) and results[2].decision.reason == "no"
    again = approver.decide_many(
        [{"approval_id": first.id, "version": first.version, "decision": "approve", "reason": "ok"}]
    )
    assert again[0].status == 200 and again[0].decision.fresh is False


def test_a_malformed_list_raises_and_decides_nothing(engine, approver):
    pause = engine.pause_for_approval(engine.register("a"), [pending()], cont())
    with pytest.raises(InvalidRequest) as refused:
        approver.decide_many([{"approval_id": pause.id, "version": pause.version, "decision": "maybe"}])
    assert "items[0].decision" in refused.value.problem["errors"]
    assert Approval.objects.get(pk=pause.id).status == "pending"
