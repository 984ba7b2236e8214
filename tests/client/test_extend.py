"""More time, escalation chains and approvals at risk through the client (issue 54), against the live server."""

from datetime import timedelta

import pytest
from suspensions_client import InvalidState, Suspension

from suspensions.clock import db_now
from suspensions.models import Approval, Event

from .conftest import cont, pending

pytestmark = pytest.mark.slow


def test_an_operator_extends_a_pause_once_however_often_the_call_is_resent(connect):
    engine, operator = connect("engine"), connect("operator")
    pause = engine.suspend(engine.register("a"), reason="external_tool", pending=[pending()], continuation=cont())
    extended = operator.extend_suspension(pause.id, seconds=600, reason="more time", idempotency_key="ext-1")
    assert isinstance(extended, Suspension) and extended.expires_at == pause.expires_at + timedelta(seconds=600)
    again = operator.extend_suspension(pause.id, seconds=600, reason="more time", idempotency_key="ext-1")
    assert again.expires_at == extended.expires_at
    assert Event.objects.filter(run_id=pause.run_id, kind="deadline_extended").count() == 1
    later = operator.extend_suspension(pause.id, until=extended.expires_at + timedelta(hours=1), reason="later")
    assert later.expires_at == extended.expires_at + timedelta(hours=1)
    engine.resume(pause.version, [{"call_id": "c1", "content": "done"}])
    with pytest.raises(InvalidState):
        operator.extend_suspension(pause.id, seconds=60, reason="gone")


def test_a_floor_requires_a_chain_and_the_inbox_lists_what_is_at_risk(connect):
    operator, both = connect("operator"), connect("engine", "approver")
    floor = operator.create_approval_floor(scope="acme", require_escalation=True)
    assert floor.require_escalation is True
    chain = [{"after_seconds": 60, "notify": {"scopes": ["acme"]}}]
    pause = both.suspend(
        both.register("a"), reason="approval", pending=[pending()], continuation=cont(), approval={"escalation": chain}
    )
    assert both.get_approval(pause.id).policy["escalation"][0]["after_seconds"] == 60
    assert [r.id for r in both.list_approvals(at_risk=True).results] == []
    Approval.objects.filter(pk=pause.id).update(at_risk_at=db_now())
    assert [r.id for r in both.list_approvals(at_risk=True).results] == [pause.id]
    assert operator.update_approval_floor(floor.id, require_escalation=False).require_escalation is False
