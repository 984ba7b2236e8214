"""Approval floors through the client (issue 32 item 5, docs/policies.md "Floors"), against the live server."""

import pytest
from suspensions_client import ApprovalFloor, BelowApprovalFloor, NotFound, PersonRequired, SeparationOfDuties, Vote

from suspensions.models import ApprovalFloor as FloorRow
from suspensions.models import Run

from .conftest import cont, pending

pytestmark = pytest.mark.slow


def test_an_operator_manages_a_floor_and_a_pause_is_held_to_it(connect):
    operator = connect("operator")
    both = connect("engine", "approver")
    floor = operator.create_approval_floor(scope="acme", quorum=2, on_expiry=["expire", "deny"])
    assert isinstance(floor, ApprovalFloor) and (floor.scope, floor.quorum, floor.exclude_requester) == (
        "acme",
        2,
        True,
    )
    assert [f.id for f in operator.list_approval_floors().results] == [floor.id]
    assert operator.get_approval_floor(floor.id) == floor
    changed = operator.update_approval_floor(floor.id, require_linked_person=True)
    assert (changed.quorum, changed.require_linked_person, changed.on_expiry) == (2, True, ["expire", "deny"])

    pause = both.suspend(both.register("a"), reason="approval", pending=[pending()], continuation=cont())
    record = both.get_approval(pause.id)
    assert record.policy == {"quorum": 2, "exclude_requester": True, "on_expiry": "expire"}
    assert record.floor == {"scopes": ["acme"], "require_linked_person": True}
    with pytest.raises(PersonRequired):
        both.decide(pause.id, pause.version)
    with pytest.raises(BelowApprovalFloor) as refused:
        both.suspend(
            both.register("b"),
            reason="approval",
            pending=[pending()],
            continuation=cont(),
            approval={"on_expiry": {"escalate": {"extend_seconds": 60}}},
        )
    assert refused.value.problem["floors"] == ["acme"]
    assert Run.objects.filter(agent_id="b", state="running").count() == 1  # registered, never paused

    assert operator.delete_approval_floor(floor.id).id == floor.id
    assert FloorRow.objects.count() == 0
    with pytest.raises(NotFound):
        operator.get_approval_floor(floor.id)


def test_separation_of_duties_under_a_floor_through_the_client(connect):
    connect("operator").create_approval_floor(scope="acme")
    both = connect("engine", "approver")
    pause = both.suspend(both.register("a"), reason="approval", pending=[pending()], continuation=cont())
    with pytest.raises(SeparationOfDuties):
        both.decide(pause.id, pause.version)
    assert not isinstance(connect("approver").decide(pause.id, pause.version), Vote)
