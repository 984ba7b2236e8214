"""Every query that reads events still uses an index on the partitioned table (docs/deploy.md, "The events table's
partitions"): the run page, the verify walk, the export's pages, the stream, and the chain writer's read of a run's
newest hash. 5,000 runs of 10 events each over seven months, each month in its own partition (moved there out of
the DEFAULT partition, as the beat does for a month it had missed), then analyzed."""

from typing import Any

import pytest
from django.db import connection

from suspensions.api import waits
from suspensions.models import Event
from suspensions.services import audit as sealing
from suspensions.services import retention
from tests.console.test_at_scale import FILL, nodes, plan_of, statements
from tests.helpers import client

pytestmark = pytest.mark.django_db
RUNS = 5_000
RUN = "md5('run' || 100)::uuid"


@pytest.fixture
def months(db) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(FILL, {"runs": RUNS})
        cursor.execute(
            "SELECT suspensions_event_partition(m::date) FROM generate_series("
            "date_trunc('month', now() - interval '7 months'), now(), interval '1 month') AS m"
        )
        cursor.execute("ANALYZE suspensions_event")
        cursor.execute("SELECT count(*) FROM suspensions_event_default")
        assert cursor.fetchone()[0] == 0
        cursor.execute(f"SELECT {RUN}")
        return [str(cursor.fetchone()[0])]


def big_seq_scans(plan: dict) -> list[str]:
    """Sequential scans of an events partition the planner expects more than 100 rows from."""
    return [
        f"{node['Relation Name']} ({node['Plan Rows']} rows)"
        for node, _ in nodes(plan)
        if node["Node Type"] == "Seq Scan"
        and node.get("Relation Name", "").startswith("suspensions_event")
        and node["Plan Rows"] > 100
    ]


def event_reads(send: Any) -> list[str]:
    found = []
    for sql, params in statements(send):
        if "suspensions_event" in sql and sql.lstrip().upper().startswith("SELECT"):
            found += big_seq_scans(plan_of(sql, params))
    return found


def test_the_fill_spans_several_month_partitions(months):
    assert len([m for _, m in retention.partitions() if m is not None]) >= 8


def test_the_run_page_reads_its_events_by_index(months, token):
    auditor = client(token("acme", ["auditor"]))
    sent = statements(lambda: auditor.get(f"/api/v1/runs/{months[0]}/events"))
    assert any("suspensions_event" in sql for sql, _ in sent)
    assert event_reads(lambda: auditor.get(f"/api/v1/runs/{months[0]}/events")) == []


def test_the_verify_walk_of_a_run_and_of_a_scope_reads_by_index(months):
    assert event_reads(lambda: sealing.verify_run(months[0])) == []
    assert event_reads(lambda: list(sealing.runs_by_chain(None, months[0]))) == []


def test_the_export_reads_by_index(months, token):
    auditor = client(token("acme", ["auditor"]))
    assert event_reads(lambda: b"".join(auditor.get("/api/v1/audit/export?scope=acme").streaming_content)) == []


def test_the_stream_reads_after_its_cursor_by_index(months):
    sql = waits._AFTER.format(columns="e.id", visible="e.scope_l1 = %s")
    assert big_seq_scans(plan_of(sql, ["0", 0, "acme", 100])) == []
    assert event_reads(lambda: waits.cursor_after(None)) == []
    assert event_reads(lambda: waits.cursor_after(17)) == []


def test_a_new_stream_starts_after_the_newest_event_by_tx_not_by_its_text(months):
    """'999' sorts after '1000' as text: the newest event is read by the xid8."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE suspensions_event SET tx = '999' WHERE id = 1")
        cursor.execute("UPDATE suspensions_event SET tx = '1000' WHERE id = 2")
        cursor.execute("SELECT max(tx)::text FROM suspensions_event")
        newest = cursor.fetchone()[0]
    assert waits.cursor_after(None)[0] == newest


def test_the_chain_writers_read_of_a_runs_newest_hash_is_by_index(months):
    newest = "SELECT p.hash FROM suspensions_event p WHERE p.run_id = %s ORDER BY p.id DESC LIMIT 1"
    plan = plan_of(newest, [months[0]])
    assert big_seq_scans(plan) == []
    assert {n.get("Index Name", "").endswith("run_id_id_idx") for n, _ in nodes(plan) if "Index Name" in n} == {True}
    assert Event.objects.filter(run_id=months[0]).count() == 10
