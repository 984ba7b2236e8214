"""Ids go into URL paths percent-encoded: an id cannot reach another endpoint (docs/decisions.md, "Ids in URL paths").

Against the live gunicorn, which decodes the path once before routing (`%2F` included).
"""

import pytest
from suspensions_client import NotFound

from suspensions.models import Run

from .conftest import cont, pending

pytestmark = pytest.mark.slow


def test_an_id_with_a_slash_or_dot_segments_is_a_404_not_another_endpoint(engine, approver):
    run = engine.register("agent-paths", scope="acme")
    paused = engine.suspend(run, reason="approval", pending=[pending()], continuation=cont())
    tricks = [
        lambda: engine.get_run(f"{run.id}/events"),  # would read the run's events
        lambda: engine.get_run("../runs"),  # would list the runs
        lambda: engine.get_run(".."),
        lambda: approver.get_approval(f"{paused.id}/decide"),  # would reach the decide endpoint
        lambda: engine.get_suspension(f"{paused.id}%2F.."),
    ]
    for trick in tricks:
        with pytest.raises(NotFound):
            trick()


def test_an_id_naming_another_run_through_dot_segments_cancels_nothing(engine):
    target = engine.register("agent-target", scope="acme")
    decoy = engine.register("agent-decoy", scope="acme")
    with pytest.raises(NotFound):
        engine.cancel(f"{decoy.id}/../{target.id}", revision=1)  # today: POST /runs/<target>/cancel
    assert [r.state for r in Run.objects.order_by("agent_id")] == ["running", "running"]
