"""A worker process keeps its database pool from one task to the next (suspensions_project/celery_pool.py).

Celery 5.7's own Django fix-up closed the pool after every task, so each
task opened DB_POOL_MIN new PostgreSQL sessions. PostgreSQL counts every
session it starts for a database (pg_stat_database.sessions): over forty
tasks, a worker that keeps its pool starts a handful, one that does not
starts two or more a task.
"""

import pytest
from django.db import connection

from suspensions.models import MessageStatus, WebhookMessage
from tests.processes import wait_for

from .conftest import make_endpoint, paused

pytestmark = pytest.mark.slow

RUNS = 20  # each an approval.requested message: a fan-out task and a delivery task or more


def sessions_started() -> int:
    """Sessions PostgreSQL has started on the test database, as its statistics have them now."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_a_worker_process_serves_many_tasks_on_the_few_sessions_its_pool_opened(worker, receiver):
    r = receiver()
    make_endpoint(url=r.url)
    worker()
    paused()  # the child's first tasks open its pool
    wait_for(lambda: WebhookMessage.objects.filter(status=MessageStatus.DELIVERED).count() == 1, "the first delivery")
    before = sessions_started()
    for _ in range(RUNS - 1):
        paused()
    wait_for(lambda: WebhookMessage.objects.filter(status=MessageStatus.DELIVERED).count() == RUNS, "every delivery")
    # Sessions that ended are counted when they end; wait for the statistics to settle (they flush within a second).
    wait_for(lambda: sessions_started() == sessions_started(), "the statistics", step=1.1)
    started = sessions_started() - before
    assert len(r.requests) == RUNS
    assert started <= 6, f"{started} PostgreSQL sessions started for {RUNS} deliveries"
