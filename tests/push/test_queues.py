"""A backlog of webhook deliveries never holds the expiry sweep behind it (two Celery queues).

Found by the soak (bench/soak.py): with one queue, thousands of queued
deliveries sat in front of each beat's sweep, which expired unrun after one
interval, so due pauses stayed live for minutes. Deliveries now go to the
`delivery` queue (fan-outs to `fanout`); a worker takes from every queue in turn.
"""

import pytest
from celery import current_app
from django.conf import settings
from redis import Redis

from suspensions.models import Run
from tests.processes import wait_for

from .conftest import paused

pytestmark = pytest.mark.slow
BACKLOG = 3000


def queued(broker):
    return sum(broker.llen(queue) for queue in ("celery", "fanout", "delivery"))


def test_the_sweep_expires_a_due_pause_while_thousands_of_deliveries_wait(worker):
    worker(SWEEP_INTERVAL_SECONDS="1")
    broker = Redis.from_url(settings.CELERY_BROKER_URL)
    with current_app.producer_or_acquire() as producer:
        for _ in range(BACKLOG):
            # Messages that do not exist: each delivery task finds nothing to send, but each takes its turn.
            current_app.send_task(
                "suspensions.tasks.deliver_endpoint", args=["00000000-0000-0000-0000-000000000000"], producer=producer
            )
    assert queued(broker) > BACKLOG // 2
    run = paused(reason="external_tool", ttl=1).run
    wait_for(lambda: Run.objects.get(pk=run.id).state == "expired", "the sweep to expire the pause")
    assert queued(broker) > 0, "the deliveries were all drained first: the sweep waited behind them"
