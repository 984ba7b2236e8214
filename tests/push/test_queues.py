"""A backlog of webhook deliveries never holds the expiry sweep behind it (the sweep's queue and worker).

Found by the soak (bench/soak.py): with one queue, thousands of queued
deliveries sat in front of each beat's sweep, which expired unrun after one
interval, so due pauses stayed live for minutes. Deliveries went to the
`delivery` queue (fan-outs to `fanout`), a worker taking from every queue in
turn; but the topology soak (issue 50, item 11) saw delivery tasks of 25-80 s
each hold every process, and no sweep ran for nine minutes. The sweep now has
a queue of its own, `sweep`, consumed by a worker of its own (docs/deploy.md,
"The sweep's worker"): a sweep needs nothing from push's workers.
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
PUSH_QUEUES = ("celery", "fanout", "delivery")


def queued(broker):
    return sum(broker.llen(queue) for queue in PUSH_QUEUES)


def enqueue_deliveries(count):
    with current_app.producer_or_acquire() as producer:
        for _ in range(count):
            # Messages that do not exist: each delivery task finds nothing to send, but each takes its turn.
            current_app.send_task(
                "suspensions.tasks.deliver_endpoint", args=["00000000-0000-0000-0000-000000000000"], producer=producer
            )


def test_the_beat_sends_the_sweep_to_its_own_queue_and_push_to_theirs():
    route = current_app.amqp.router.route
    assert route({}, "suspensions.tasks.sweep_expired")["queue"].name == "sweep"
    assert route({}, "suspensions.tasks.deliver_endpoint")["queue"].name == "delivery"
    assert route({}, "suspensions.tasks.fan_out_outbox")["queue"].name == "fanout"
    assert route({}, "suspensions.tasks.webhook_sweep")["queue"].name == "celery"


def test_the_sweep_expires_a_due_pause_while_thousands_of_deliveries_wait(worker):
    worker(SWEEP_INTERVAL_SECONDS="1")
    broker = Redis.from_url(settings.CELERY_BROKER_URL)
    enqueue_deliveries(BACKLOG)
    assert queued(broker) > BACKLOG // 2
    run = paused(reason="external_tool", ttl=1).run
    wait_for(lambda: Run.objects.get(pk=run.id).state == "expired", "the sweep to expire the pause")
    assert queued(broker) > 0, "the deliveries were all drained first: the sweep waited behind them"


def test_the_sweeps_own_worker_expires_a_due_pause_with_no_push_worker_running(worker):
    worker("sweep", SWEEP_INTERVAL_SECONDS="1")
    broker = Redis.from_url(settings.CELERY_BROKER_URL)
    broker.delete(*PUSH_QUEUES)  # its --purge emptied its own queue only
    enqueue_deliveries(100)
    run = paused(reason="external_tool", ttl=1).run
    wait_for(lambda: Run.objects.get(pk=run.id).state == "expired", "the sweep's worker to expire the pause")
    # Nothing of push's was taken (the beat may have queued more): the sweep's worker never runs a delivery.
    assert broker.llen("delivery") >= 100
