"""A fan-out under a backlog: what holding one event costs must not grow with the events of other runs waiting.

The hold asks, for each held event, whether an earlier event of its run is
still undispatched. Answered by reading every undispatched entry, that
probe took a whole PostgreSQL core in the soak once ~40,000 messages waited
(docs/benchmarks.md, "Soak"); it reads the run's own entries now.
"""

import json
import uuid

import pytest
from django.db import connection

from suspensions.clock import db_now
from suspensions.models import OutboxEvent
from suspensions.services import fan_out_steps
from suspensions.services.sql import push

pytestmark = pytest.mark.django_db


def waiting(n, run_id=None):
    """`n` undispatched events: of `run_id`, or each of a run of its own."""
    now = db_now()
    rows = [OutboxEvent(run_id=run_id or uuid.uuid4(), type="run.finished", data={}, created_at=now) for _ in range(n)]
    for row in rows:
        row.stamp_scope("acme")
    return OutboxEvent.objects.bulk_create(rows)


def probe_buffers(event):
    """Buffers the hold's held-back probe (its scan of the outbox, `o`) read for `event` alone (EXPLAIN ANALYZE)."""
    with connection.cursor() as cursor:
        statement = push.HOLD[(True, False)]  # the fan-out task's: its events by id
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, {"limit": 200, "ids": [event.id]})
        (plan,) = cursor.fetchone()
    plan = json.loads(plan) if isinstance(plan, str) else plan
    probes = []

    def walk(node, in_probe):
        if in_probe and node.get("Alias") == "o":
            probes.append(node["Shared Hit Blocks"] + node["Shared Read Blocks"])
            return
        for child in node.get("Plans", []):
            walk(child, in_probe or node.get("Parent Relationship") == "SubPlan")

    walk(plan[0]["Plan"], False)
    assert len(probes) == 1, plan
    return probes[0]


def test_holding_an_event_reads_no_more_with_thousands_of_earlier_events_of_other_runs_waiting():
    waiting(30)
    _, after_few = waiting(2, uuid.uuid4())
    waiting(3000)
    _, after_many = waiting(2, uuid.uuid4())
    few, many = probe_buffers(after_few), probe_buffers(after_many)
    # Each run's earlier event is still undispatched: its later one is held back, whatever else waits.
    assert fan_out_steps.hold([after_few.id, after_many.id], None, 200)[1:] == ([], [after_few.id, after_many.id])
    # An index lookup may gain a level as the index grows; a scan of the waiting events reads them all.
    assert many <= few + 3, (few, many)
