"""Issue 4: the expiry sweep (T9) over a large backlog, against a raw set-based statement doing the same writes.

The backlog is `--due` expired pauses among `--total` rows (the rest due in
a year), a third each: external_tool pauses, approval pauses (with their
approval requests) and admitted, unstarted agent-reply continuations (which
get expiry receipts). Figures, all from the same run:

- rows/s of `services.expire_suspensions()` (SWEEP_BATCH_SIZE rows per
  transaction) and of one raw psycopg statement per batch of the same size
  doing the same writes (a data-modifying CTE: lock, runs, events,
  approvals, admissions, receipts, delete), and their ratio;
- the longest single transaction of each;
- the sweep's Python peak memory (tracemalloc) over backlogs of a tenth
  and of the full size: flat means bounded by the batch, not the backlog.

Writes bench/results/latest/sweep.{json,md} and the "## Sweep" section of
docs/benchmarks.md.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/suspensions_sweep_bench .venv/bin/python bench/sweep.py
"""

import json
import re
import sys
import time
import tracemalloc
from typing import Any

import common

SCOPE = "bench-sweep"
DOC = common.ROOT / "docs" / "benchmarks.md"

# i % 3: 0 external_tool pause, 1 approval pause, 2 admitted agent-reply continuation. Ids derive from i.
BUILD = """
WITH rows AS (
    SELECT i, md5('run' || i)::uuid AS run_id, md5('pause' || i)::uuid AS pause_id,
           (ARRAY['external_tool', 'approval', 'agent_reply'])[i %% 3 + 1] AS reason,
           CASE WHEN i <= %(due)s THEN now() - interval '1 hour' ELSE now() + interval '1 year' END
               + i * interval '1 microsecond' AS expires_at
    FROM generate_series(1, %(total)s) AS i
), runs AS (
    INSERT INTO suspensions_run (id, scope, scope_l1, scope_l2, scope_l3, agent_id, session_id, state, revision,
                                 error, last_reason, created_at, updated_at)
    SELECT run_id, %(scope)s, %(scope)s, '', '', 'bench', '', CASE WHEN i %% 3 = 2 THEN 'running' ELSE 'paused' END,
           CASE WHEN i %% 3 = 2 THEN 3 ELSE 2 END, '', reason, now(), now()
    FROM rows
), pauses AS (
    INSERT INTO suspensions_suspension (id, run_id, scope, scope_l1, scope_l2, scope_l3, reason, pending,
                                        continuation, tool_names, reply_with, correlation_id, expires_at, deadline,
                                        created_at)
    SELECT pause_id, run_id, %(scope)s, %(scope)s, '', '', reason, %(pending)s, %(continuation)s, ',refund,',
           CASE WHEN reason = 'agent_reply' THEN 'q-1' ELSE '' END, '', expires_at, expires_at, now()
    FROM rows
), approvals AS (
    INSERT INTO suspensions_approval (suspension_id, run_id, scope, scope_l1, scope_l2, scope_l3, status, decided_by,
                                      note, created_at, agent_id, pending, requested_by, quorum, exclude_requester,
                                      on_expiry, final_calls, response, expires_at)
    SELECT pause_id, run_id, %(scope)s, %(scope)s, '', '', 'pending', '', '', now(), 'bench', %(pending)s,
           'token:bench', 1, false, 'expire', '', '', expires_at
    FROM rows WHERE i %% 3 = 1
)
INSERT INTO suspensions_admission (id, run_id, suspension_id, scope, scope_l1, scope_l2, scope_l3, source, state,
                                   input, request_digest, suspension_digest, version_revision, claimed_revision,
                                   actor, admitted_at)
SELECT md5('admission' || i)::uuid, run_id, pause_id, %(scope)s, %(scope)s, '', '', 'agent_reply', 'admitted',
       '"ok"', md5('request' || i) || md5('request' || i), md5('pause' || i) || md5('pause' || i), 2, 3,
       'token:bus', now()
FROM rows WHERE i %% 3 = 2
"""

# The same writes as the service, as one statement per batch. The receipt digest is computed in SQL over the
# same fields (not byte-identical canonical JSON, the same amount of hashing).
RAW_BATCH = """
WITH now AS (SELECT clock_timestamp() AS at),
due AS (
    SELECT r.id AS run_id, r.state, r.revision, r.scope, r.scope_l1, r.scope_l2, r.scope_l3,
           s.id AS pause_id, s.reason, s.expires_at
    FROM suspensions_run r JOIN suspensions_suspension s ON s.run_id = r.id, now
    WHERE s.expires_at <= now.at
    ORDER BY s.expires_at
    LIMIT %(limit)s
    FOR NO KEY UPDATE OF r SKIP LOCKED
), claims AS (
    SELECT a.id, a.run_id, a.request_digest FROM suspensions_admission a JOIN due
        ON a.run_id = due.run_id AND a.suspension_id = due.pause_id
    WHERE due.state = 'running' AND a.state = 'admitted'
), expiring AS (
    SELECT due.* FROM due WHERE due.state = 'paused' OR due.run_id IN (SELECT run_id FROM claims)
), runs AS (
    UPDATE suspensions_run r SET state = 'expired', revision = r.revision + 1, updated_at = now.at,
           error = 'expired: nobody answered the ' || e.reason || ' pause by its deadline '
                   || to_char(e.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    FROM expiring e, now WHERE r.id = e.run_id
    RETURNING r.id
), events AS (
    -- No audit chain here (empty prev_hash and hash): this variant measures the statement's shape only.
    INSERT INTO suspensions_event (run_id, scope, scope_l1, scope_l2, scope_l3, kind, actor, revision, data, at,
                                   prev_hash, hash)
    SELECT e.run_id, e.scope, e.scope_l1, e.scope_l2, e.scope_l3, 'expired', 'sweeper', e.revision + 1,
           jsonb_build_object('suspension_id', e.pause_id, 'reason', e.reason, 'expires_at', e.expires_at), now.at,
           '', ''
    FROM expiring e, now
    RETURNING id, run_id
), approvals AS (
    UPDATE suspensions_approval ap SET status = 'expired', resolved_at = now.at, note = 'nobody answered in time'
    FROM now WHERE ap.suspension_id IN (SELECT pause_id FROM expiring) AND ap.status = 'pending'
), admissions AS (
    UPDATE suspensions_admission a SET state = 'expired' WHERE a.id IN (SELECT id FROM claims)
), receipts AS (
    INSERT INTO suspensions_expiryreceipt (id, run_id, suspension_id, scope, scope_l1, scope_l2, scope_l3,
                                           request_digest, run_revision, event_id, digest, expired_at)
    SELECT gen_random_uuid(), e.run_id, e.pause_id, e.scope, e.scope_l1, e.scope_l2, e.scope_l3, c.request_digest,
           e.revision + 1, ev.id,
           encode(sha256(convert_to(json_build_object('run_id', e.run_id, 'suspension_id', e.pause_id,
               'scope', e.scope, 'request_digest', c.request_digest, 'run_revision', e.revision + 1,
               'expired_at', now.at)::text, 'UTF8')), 'hex'),
           now.at
    FROM expiring e JOIN claims c ON c.run_id = e.run_id JOIN events ev ON ev.run_id = e.run_id, now
), deleted AS (
    DELETE FROM suspensions_suspension WHERE id IN (SELECT pause_id FROM expiring)
)
SELECT count(*) FROM due
"""


def build(due: int, total: int) -> None:
    from django.db import connection

    common.reset_tables()
    pending = '[{"arguments":"{\\"amount\\": 900}","id":"c1","name":"refund","reply_with":"q-1"}]'
    with connection.cursor() as cursor:
        cursor.execute(
            BUILD,
            {
                "due": due,
                "total": total,
                "scope": SCOPE,
                "pending": pending,
                "continuation": json.dumps(common.continuation(), separators=(",", ":")),
            },
        )
        cursor.execute("VACUUM ANALYZE suspensions_run, suspensions_suspension, suspensions_admission")


def check(due: int) -> None:
    from suspensions.models import Event, ExpiryReceipt, Run, Suspension

    expired = Run.objects.filter(state="expired").count()
    assert expired == due, f"{expired} expired, expected {due}"
    assert Event.objects.filter(kind="expired").count() == due
    assert ExpiryReceipt.objects.count() == len(range(2, due + 1, 3))
    assert Suspension.objects.filter(expires_at__lte=common_now()).count() == 0


def common_now() -> Any:
    from suspensions.services import db_now

    return db_now()


def service_sweep(batch: int) -> dict[str, Any]:
    from suspensions import services

    began = time.perf_counter()
    result = services.expire_suspensions(batch_size=batch)
    seconds = time.perf_counter() - began
    return {
        "rows": result.expired,
        "seconds": round(seconds, 3),
        "rows_per_s": round(result.expired / seconds),
        "batches": result.batches,
        "longest_transaction_ms": common.ms(result.longest_batch_seconds),
    }


def raw_sweep(url: str, batch: int) -> dict[str, Any]:
    rows, longest, batches = 0, 0.0, 0
    began = time.perf_counter()
    with common.connect(url) as conn:
        while True:
            t0 = time.perf_counter()
            with conn.transaction():
                locked = conn.execute(RAW_BATCH, {"limit": batch}).fetchone()[0]
            longest = max(longest, time.perf_counter() - t0)
            rows += locked
            batches += 1
            if locked < batch:
                break
    seconds = time.perf_counter() - began
    return {
        "rows": rows,
        "seconds": round(seconds, 3),
        "rows_per_s": round(rows / seconds),
        "batches": batches,
        "longest_transaction_ms": common.ms(longest),
    }


def peak_memory(due: int, total: int, batch: int) -> dict[str, Any]:
    from suspensions import services

    build(due, total)
    tracemalloc.start()
    tracemalloc.reset_peak()
    result = services.expire_suspensions(batch_size=batch)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.expired == due
    return {"backlog": due, "peak_kib": round(peak / 1024)}


SECTION = """## Sweep (issue 4)

How fast `services.expire_suspensions()` works off a backlog, against a raw
psycopg sweep doing the same writes in the same run.

<!-- bench:sweep -->
<!-- /bench:sweep -->
"""


def write_doc(md: str, url: str) -> None:
    """The generated block of the "## Sweep" section of docs/benchmarks.md (the section is added if missing)."""
    if "<!-- bench:sweep -->" not in (DOC.read_text() if DOC.exists() else ""):
        text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
        DOC.write_text(text.rstrip("\n") + "\n\n" + SECTION)
    shown = re.sub(r":[^:@/]+@", ":***@", url)  # never a password in the docs
    command = f"BENCH_DATABASE_URL={shown} .venv/bin/python bench/sweep.py {' '.join(sys.argv[1:])}".rstrip()
    common.update_doc("sweep", f"Produced by `{command}`.\n\n{md}")


def main() -> dict[str, Any]:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--due", type=int, default=100_000)
    p.add_argument("--total", type=int, default=200_000)
    args = p.parse_args()
    url = common.setup_django()
    from django.conf import settings

    batch = settings.SWEEP_BATCH_SIZE
    rounds: list[dict[str, Any]] = []
    for round_no in range(args.rounds):
        row: dict[str, Any] = {}
        for kind in ("service", "raw") if round_no % 2 == 0 else ("raw", "service"):
            build(args.due, args.total)
            row[kind] = service_sweep(batch) if kind == "service" else raw_sweep(url, batch)
            check(args.due)
            print(f"round {round_no + 1} {kind}: {row[kind]}", flush=True)
        rounds.append(row)
    memory = [peak_memory(args.due // 10, args.total // 10, batch), peak_memory(args.due, args.total, batch)]
    print(f"memory: {memory}", flush=True)
    figures = {
        kind: {k: common.median([r[kind][k] for r in rounds]) for k in rounds[0][kind]} for kind in ("service", "raw")
    }
    # Taken inside each round (the two sweeps ran seconds apart), then the median over the rounds.
    ratios = [round(r["service"]["rows_per_s"] / r["raw"]["rows_per_s"], 2) for r in rounds]
    ratio = common.median(ratios)
    data = {
        "machine": common.machine(),
        "args": vars(args),
        "batch": batch,
        "figures": figures,
        "service_over_raw": ratio,
        "service_over_raw_per_round": ratios,
        "memory": memory,
        "rounds": rounds,
    }
    md = "\n".join(
        [
            f"### Expiry sweep: {args.due:,} due pauses among {args.total:,} rows, batches of {batch:,} "
            f"(median of {args.rounds} rounds, {data['machine']['nproc']} cores, PostgreSQL "
            f"{data['machine']['postgresql']})",
            "",
            common.table(
                ["sweep", "rows", "seconds", "rows/s", "batches", "longest transaction ms"],
                [
                    [kind, f["rows"], f["seconds"], f["rows_per_s"], f["batches"], f["longest_transaction_ms"]]
                    for kind, f in (
                        ("service (expire_suspensions)", figures["service"]),
                        ("raw psycopg CTE", figures["raw"]),
                    )
                ],
            ),
            "",
            f"Service rate over raw rate: **{ratio}** ({min(ratios)}-{max(ratios)} over the rounds; target at least "
            f"0.5); {args.due:,} rows in "
            f"{figures['service']['seconds']} s (target: 100,000 in under 10 s).",
            "",
            common.table(
                ["backlog (due rows)", "sweep peak Python memory (tracemalloc)"],
                [[f"{m['backlog']:,}", f"{m['peak_kib']:,} KiB"] for m in memory],
            ),
        ]
    )
    common.write_result("sweep", data, md)
    write_doc(md, url)
    return data


if __name__ == "__main__":
    main()
