"""On expiry (docs/policies.md, "What happens at the deadline") applied by the real sweep on Celery beat, announced to a
real receiver.

A worker with its beat sweeping every second; pauses with one-second
deadlines and an approval policy; the receiver verifies every signature.
"""

import pytest

from suspensions.models import Approval, Run
from tests.processes import wait_for

from .conftest import make_endpoint, paused

pytestmark = pytest.mark.slow


def state_of(s):
    return Run.objects.get(pk=s.run_id).state


def test_the_beat_sweep_denies_escalates_then_expires_and_announces_each(worker, receiver):
    r = receiver()
    endpoint = make_endpoint(url=r.url, event_types=["suspension.expired", "approval.escalated"])
    denied = paused(ttl=1, on_expiry="deny")
    escalated = paused(ttl=1, on_expiry={"escalate": {"extend_seconds": 2}})
    worker(SWEEP_INTERVAL_SECONDS="1")
    wait_for(lambda: state_of(denied) == "failed", "the sweep to deny the unanswered approval")
    assert Run.objects.get(pk=denied.run_id).error == "rejected: nobody answered in time"
    wait_for(lambda: Approval.objects.get(pk=escalated.id).escalated_at is not None, "the escalation")
    assert state_of(escalated) == "paused"
    wait_for(lambda: state_of(escalated) == "expired", "the expiry at the moved deadline")
    wait_for(lambda: len(r.requests) >= 3, "three deliveries")
    seen = {(b["type"], b["data"]["suspension_id"]) for b in r.verified(endpoint.secret)}
    assert seen == {
        ("suspension.expired", str(denied.id)),
        ("approval.escalated", str(escalated.id)),
        ("suspension.expired", str(escalated.id)),
    }
