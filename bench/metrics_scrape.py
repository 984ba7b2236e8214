"""Issue 15: a /metrics scrape at a million pauses must not scan the suspension table.

Loads 1,000,000 pauses with generate_series (reasons in turn; the 10,000
oldest approvals already approved, so "oldest pending approval" has rows to
skip), then, once right after the load (visibility map empty, what a busy
table looks like) and once after VACUUM: EXPLAIN (ANALYZE, BUFFERS) of every
statement the scrape's database gauges run, and the wall time of whole
scrapes (`metrics.exposition()`, in process). Fails if any plan has a Seq Scan
on the suspension or run table.

    .venv/bin/python bench/metrics_scrape.py [--rows 1000000] [--approved 10000] [--scrapes 20]
"""

import argparse
import json
import sys
import time
from typing import Any

import common

LOAD_RUNS = """
INSERT INTO suspensions_run (id, scope, scope_l1, scope_l2, scope_l3, agent_id, session_id, state, revision,
                             error, last_reason, created_at, updated_at)
SELECT md5('run' || i)::uuid, 'scope-' || (i %% 97), 'scope-' || (i %% 97), '', '', 'agent-' || (i %% 20), '',
       CASE WHEN i %% 3 = 0 AND i <= %(approved)s * 3 THEN 'running' ELSE 'paused' END,
       2, '', CASE i %% 3 WHEN 0 THEN 'approval' WHEN 1 THEN 'external_tool' ELSE 'agent_reply' END,
       now(), now()
FROM generate_series(1, %(rows)s) AS i
"""

# created_at: the lowest i is the oldest, so the approved approvals (low i) come first in suspension_oldest.
LOAD_SUSPENSIONS = """
INSERT INTO suspensions_suspension (id, scope, scope_l1, scope_l2, scope_l3, run_id, reason, pending, continuation,
                                    tool_names, reply_with, correlation_id, expires_at, deadline, created_at)
SELECT md5('sus' || i)::uuid, 'scope-' || (i %% 97), 'scope-' || (i %% 97), '', '', md5('run' || i)::uuid,
       CASE i %% 3 WHEN 0 THEN 'approval' WHEN 1 THEN 'external_tool' ELSE 'agent_reply' END,
       %(pending_text)s, %(continuation)s, ',refund,', '', '',
       now() + interval '1 day' + (i::bigint * 7919 %% %(rows)s) * interval '1 second',
       now() + interval '1 day' + (i::bigint * 7919 %% %(rows)s) * interval '1 second',
       now() - interval '30 days' + i * interval '1 second'
FROM generate_series(1, %(rows)s) AS i
"""


def load(rows: int, approved: int) -> float:
    from django.db import connection

    params = {
        "rows": rows,
        "approved": approved,
        "pending_text": json.dumps(common.pending_call()),
        "continuation": json.dumps(common.continuation()),
    }
    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(LOAD_RUNS, params)
        cursor.execute(LOAD_SUSPENSIONS, params)
        cursor.execute("ANALYZE suspensions_run")
        cursor.execute("ANALYZE suspensions_suspension")
    return time.perf_counter() - began


def gauge_statements() -> list[str]:
    """The SQL the scrape's database gauges run, as executed."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from suspensions.observability.metrics import DatabaseGauges

    with CaptureQueriesContext(connection) as captured:
        list(DatabaseGauges().collect())
    return [q["sql"] for q in captured.captured_queries]


def explain(sql: str) -> list[str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + sql)
        return [row[0] for row in cursor.fetchall()]


def scrape_times(count: int) -> list[float]:
    from suspensions.observability import metrics

    times = []
    for _ in range(count):
        began = time.perf_counter()
        metrics.exposition()
        times.append(time.perf_counter() - began)
    return times


def measure(label: str, scrapes: int) -> dict[str, Any]:
    # The planner estimates the scrape asks for (EXPLAIN without ANALYZE) execute nothing: shown as they are.
    plans = {
        sql: ["(an estimate: not executed)"] if sql.startswith("EXPLAIN") else explain(sql)
        for sql in gauge_statements()
    }
    times = scrape_times(scrapes)
    return {"label": label, "plans": plans, "scrape_ms": [common.ms(t) for t in times]}


def markdown(rows: int, approved: int, loaded: float, phases: list[dict[str, Any]]) -> str:
    lines = [f"{rows:,} pauses ({approved:,} of the oldest approvals already approved) loaded in {loaded:.0f} s.", ""]
    for phase in phases:
        ms = phase["scrape_ms"]
        lines.append(
            f"### {phase['label']}: scrape p50 {common.median(ms):.1f} ms, max {max(ms):.1f} ms ({len(ms)} scrapes)"
        )
        for sql, plan in phase["plans"].items():
            lines += ["", "```", sql, "", *plan, "```"]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--approved", type=int, default=10_000, help="approved, unstarted approvals, the oldest")
    args = parser.parse_args()
    common.setup_django()
    common.reset_tables()
    from django.db import connection

    loaded = load(args.rows, args.approved)
    phases = [measure("right after the load (ANALYZE only)", args.scrapes)]
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE suspensions_suspension")
        cursor.execute("VACUUM ANALYZE suspensions_run")
    phases.append(measure("after VACUUM", args.scrapes))
    common.write_result(
        "metrics_scrape",
        {"rows": args.rows, "approved": args.approved, "load_seconds": loaded, "phases": phases},
        markdown(args.rows, args.approved, loaded, phases),
    )
    scans = [
        line
        for phase in phases
        for plan in phase["plans"].values()
        for line in plan
        if "Seq Scan on suspensions_suspension" in line or "Seq Scan on suspensions_run" in line
    ]
    if scans:
        print("FAIL: a gauge scans a table:", *scans, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
