"""The audit chain (docs/auditors.md, "What is recorded") and its export (docs/api.md, "7.14 Audit"): what the audit
chain costs a transition, and the export's memory at a million events.

(a) chain: register + pause + one-shot resume (four events) through the
services, in this process, with the events chained (the hash finished by
PostgreSQL's `suspensions_chain_events`, one call per `write_events`:
`sql.rows.Writes.insert_events`) and, side by side, with a
plain INSERT of the same row and empty hashes: the plain one is swapped in at
run time in this bench process only (the service has no switch to turn the
chain off). The cycle runs twice: calling the services, and as three
requests through Django's whole request stack (the test client: DRF,
authentication, JSON), closer to a transition as a client pays for it.
Phases alternate inside each round; per cycle: wall time, this
process's CPU and that of its PostgreSQL backend, and "whole", the two together: what the
transition costs the machine. Each round first does what autovacuum would have done by then
(VACUUM ANALYZE: autovacuum is off on this machine's server), so no round runs on plans made
for empty tables. Per metric: the median of the rounds' ratios, their spread, and a 95%
bootstrap interval of that median. Goal: the chain costs a transition at most 5%.

(b) export: 1,000,000 events written with generate_series (1,000 runs of
1,000 events; their hashes are not a real chain: only the bytes count here),
then `GET /api/v1/audit/export` streamed through Django's test client, the
lines counted as they come; this process's resident memory (VmRSS) and its
peak (VmHWM) are read at 100,000 lines and at 1,000,000.

    .venv/bin/python bench/audit.py [--rounds 5] [--cycles 200] [--events 1000000] [--only chain|export]
"""

import json
import resource
import time
from typing import Any

import common

SCOPE = "bench-audit"
RESULTS = [{"call_id": "c1", "content": {"ok": True}}]


# -- (a) the chain's cost per transition -------------------------------------------------------


def plain_insert_events(self: Any, rows: Any) -> None:
    """The INSERT without the chain: the same rows, empty hashes, one multi-row INSERT (bench only)."""
    for row in rows:
        row.prev_hash, row.hash = "", ""
    self.insert(rows)


def cycles(n: int) -> None:
    from suspensions import services

    engine = common.principal(SCOPE, ["engine"], "bench-engine")
    for _ in range(n):
        run = services.register_run(principal=engine, agent_id="bench-agent", scope=SCOPE)
        pause = services.suspend_run(
            principal=engine,
            run_id=run.id,
            revision=1,
            reason="external_tool",
            pending=common.pending_call(),
            continuation=common.continuation(),
        )
        version = services.Version(run_id=run.id, suspension_id=pause.id, run_revision=2)
        services.resume_run(principal=engine, run_id=run.id, version=version, results=RESULTS)


def backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


class Requests:
    """The same cycle as three requests through Django's whole request stack (test client: DRF, auth, JSON)."""

    def __init__(self) -> None:
        from django.test import Client

        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {common.make_token(SCOPE, ['engine'], 'bench-http')}")

    def post(self, path: str, body: dict[str, Any]) -> Any:
        response = self.client.post(f"/api/v1{path}", data=json.dumps(body), content_type="application/json")
        assert response.status_code == 201, response.content[:300]
        return response.json()

    def __call__(self, n: int) -> None:
        for _ in range(n):
            run = self.post("/runs", {"agent_id": "bench-agent"})
            body = {
                "revision": 1,
                "reason": "external_tool",
                "pending": common.pending_call(),
                "continuation": common.continuation(),
            }
            pause = self.post(f"/runs/{run['id']}/suspend", body)
            version = {"run_id": run["id"], "suspension_id": pause["id"], "run_revision": 2}
            self.post(f"/runs/{run['id']}/resume", {"version": version, "results": RESULTS})


def phase(chained: bool, n: int, cycles: Any = cycles) -> dict[str, float]:
    from suspensions.services.sql import rows

    original = rows.Writes.insert_events
    if not chained:
        rows.Writes.insert_events = plain_insert_events  # type: ignore[method-assign]
    try:
        backend = [backend_pid()]  # this process's own backend: other PostgreSQL clients on the machine are not counted
        pg, cpu, began = common.cpu_seconds(backend), time.process_time(), time.perf_counter()
        cycles(n)
        wall, cpu, pg_cpu = time.perf_counter() - began, time.process_time() - cpu, common.cpu_seconds(backend) - pg
    finally:
        rows.Writes.insert_events = original  # type: ignore[method-assign]
    return {"wall_ms": common.ms(wall / n), "cpu_ms": common.ms(cpu / n), "pg_cpu_ms": common.ms(pg_cpu / n)}


def metric_of(phase: dict[str, float], metric: str) -> float:
    """One metric of a phase; "whole" is the CPU a transition costs the machine: this process's and its backend's."""
    return phase["cpu_ms"] + phase["pg_cpu_ms"] if metric == "whole" else phase[metric]


def chain_cost(rounds: int, n: int, url: str) -> tuple[list[dict[str, Any]], str]:
    requests = Requests()
    cycles(20)  # warm: connections, caches
    requests(20)
    found = []
    for r in range(rounds):
        common.between_rounds(url, r + 1)  # what autovacuum would have done by now (it is off on this machine)
        order = [True, False] if r % 2 == 0 else [False, True]
        result = {("chained" if c else "plain"): phase(c, n) for c in order}
        result |= {("http chained" if c else "http plain"): phase(c, n, requests) for c in order}
        found.append(result)
        print(f"round {r + 1}: {result}", flush=True)
    rows = []
    for way, prefix in (("services", ""), ("request stack", "http ")):
        for metric in ("wall_ms", "cpu_ms", "pg_cpu_ms", "whole"):
            on, off = (
                [metric_of(x[prefix + "chained"], metric) for x in found],
                [metric_of(x[prefix + "plain"], metric) for x in found],
            )
            ratios = [a / b for a, b in zip(on, off, strict=True) if b > 0]
            name = f"{way}: {metric.removesuffix('_ms')}"
            low, high = common.median_interval(ratios)
            cells = [
                f"{common.median(off):.2f}",
                f"{common.median(on):.2f}",
                common.spread(ratios),
                f"{low:.2f}-{high:.2f}",
            ]
            rows.append([name, *cells])
    title = f"### Audit chain: register + pause + resume, 4 events ({rounds} rounds, {n} cycles a phase, ms per cycle)"
    return found, title + "\n\n" + common.table(
        ["per cycle", "plain INSERT", "chained INSERT", "ratio (rounds' spread)", "median's 95% interval"], rows
    )


# -- (b) the export at a million events ---------------------------------------------------------


def fill(events: int, per_run: int) -> None:
    """`events` events of `events / per_run` runs, written in one statement (set-up, not measured)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO suspensions_event (run_id, scope, scope_l1, scope_l2, scope_l3, kind, actor, revision, data, "
            "at, prev_hash, hash) "
            "SELECT md5((g / %s)::text)::uuid, %s, %s, '', '', 'noted', 'bench', g %% %s, "
            "jsonb_build_object('n', g, 'note', 'an event of the export bench'), now(), "
            "md5(g::text) || md5(g::text), md5((g + 1)::text) || md5((g + 1)::text) "
            "FROM generate_series(0, %s - 1) g",
            [per_run, SCOPE, SCOPE, per_run, events],
        )
        # Statistics, as autovacuum would take them: stale, the planner sorts the whole scope for each page.
        cursor.execute("ANALYZE suspensions_event")


def memory() -> dict[str, float]:
    """This process's resident and peak resident memory, MiB (Linux)."""
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
    return {k: int(status[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM")}


def export_memory(events: int) -> tuple[dict[str, Any], str]:
    from django.test import Client

    common.reset_tables()
    fill(events, 1000)
    token = common.make_token(SCOPE, ["auditor"], "bench-auditor")
    before, began = memory(), time.perf_counter()
    response = Client().get("/api/v1/audit/export", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content[:300]
    marks, lines, size = {}, 0, 0
    for chunk in response.streaming_content:
        lines += chunk.count(b"\n")
        size += len(chunk)
        if lines in (1, 100_000, events):
            marks[lines] = memory()
    seconds = time.perf_counter() - began
    assert lines == events, lines
    rows = [["before", f"{before['VmRSS']:.0f}", f"{before['VmHWM']:.0f}"]]
    rows += [[f"{n:,} lines", f"{m['VmRSS']:.0f}", f"{m['VmHWM']:.0f}"] for n, m in sorted(marks.items())]
    title = f"### Export of {events:,} events ({size / 2**20:.0f} MiB of JSON Lines in {seconds:.0f} s), this process"
    table = common.table(["when", "RSS MiB", "peak RSS MiB"], rows)
    return {"marks": marks, "before": before, "bytes": size, "seconds": seconds}, f"{title}\n\n{table}"


def main() -> None:
    p = common.parser(__doc__.split("\n")[0])
    p.add_argument("--cycles", type=int, default=200)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--only", choices=["chain", "export"], default=None, help="one half of the bench")
    args = p.parse_args()
    url = common.setup_django()
    common.reset_tables()
    rounds, chain_md, marks, export_md = [], "", {}, ""
    if args.only != "export":
        rounds, chain_md = chain_cost(args.rounds, args.cycles, url)
    if args.only != "chain":
        marks, export_md = export_memory(args.events)
    common.reset_tables()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    data = {"rounds": rounds, "export": marks, "machine": common.machine(), "maxrss_mib": maxrss}
    common.write_result(
        "audit" if args.only is None else f"audit-{args.only}", data, f"{chain_md}\n\n{export_md}".strip()
    )


if __name__ == "__main__":
    main()
