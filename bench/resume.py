"""Issue 8.1: the framework overhead of the resume path.

One workload several ways, interleaved round by round, median of the rounds:

- R1: raw psycopg 3 replaying exactly the statements the service issued for a
  pause and a one-shot resume (captured from the service with an execute
  wrapper, replayed with fresh ids through a ClientCursor as Django does);
- S-in: the service functions called in-process;
- S-http: the HTTP API under gunicorn (gthread, keep-alive), driven by
  keep-alive http.client connections in threads on 127.0.0.1;
- F-http: the floor (bench/floor_app.py: a DRF view, a bearer token checked
  by one indexed SELECT, one indexed SELECT of the run) twice per cycle, on
  the same gunicorn and connections: what two requests cost on this stack
  before the service does anything. S-http / F-http is the service's share;
  F-http / R1 is the ceiling any DRF request pair reaches against R1;
- S-app, F-app: the same cycles sent to the WSGI application in this
  process, one thread, no server: the application's own CPU per cycle. With
  it the bench works out how far S-http and F-http could go against R1 if
  serving HTTP cost nothing (`ceilings`), which tells whether a faster
  server could meet a ratio at all.

A cycle is one pause (T2) plus one one-shot resume (T3) of a registered run;
runs are registered beforehand with COPY. Counts come from a separate pass
through the counting proxy, never from the timed pass.

    .venv/bin/python bench/resume.py [--rounds 3] [--ops 300] [--clients 1,8,32]
"""

import time
import uuid
from contextlib import nullcontext
from typing import Any

import common

SCOPE = "bench"
RESULTS = [{"call_id": "c1", "content": {"ok": True, "rows": 3}}]


# -- capture ------------------------------------------------------------------------


def capture(fn: Any) -> tuple[list[tuple[str, Any, bool]], Any]:
    """Run `fn()` and return the (sql, params, in a transaction) it executed through Django, in order."""
    from django.db import connection

    calls: list[tuple[str, Any, bool]] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        calls.append((sql, params, not connection.get_autocommit()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        result = fn()
    return calls, result


def capture_templates() -> "Replay":
    """The statements of one pause and one one-shot resume, as the service issues them."""
    from suspensions import services

    who = common.principal(SCOPE, ["engine"])
    run_id = common.bulk_runs(1, SCOPE)[0]
    pause, suspension = capture(
        lambda: services.suspend_run(
            principal=who,
            run_id=run_id,
            revision=1,
            reason="external_tool",
            pending=common.pending_call(),
            continuation=common.continuation(),
        )
    )
    version = services.Version(run_id=run_id, suspension_id=suspension.id, run_revision=2)
    resume, claimed = capture(
        lambda: services.resume_run(principal=who, run_id=run_id, version=version, results=RESULTS)
    )
    old = {"run": run_id, "suspension": suspension.id, "admission": claimed.admission.id, "start": claimed.start.id}
    return Replay({"pause": pause, "resume": resume}, old)


def _swap(value: Any, mapping: dict[Any, Any]) -> Any:
    if isinstance(value, uuid.UUID):
        return mapping.get(value, value)
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, (list, tuple)):
        return type(value)(_swap(v, mapping) for v in value)
    return value


class Replay:
    """R1: captured statements executed by plain psycopg, in a transaction where the service had one.

    `statements` maps a call kind to its (sql, params, in a transaction)
    list; `old` names the ids the capture created, which each replay swaps
    for fresh ones.
    """

    def __init__(self, statements: dict[str, list[tuple[str, Any, bool]]], old: dict[str, Any]) -> None:
        self.statements = statements
        self.old = old

    def ids_for(self, run_id: Any = None) -> dict[Any, Any]:
        from suspensions.ids import uuid7

        mapping: dict[Any, Any] = {}
        for key, old in self.old.items():
            fresh = run_id if key == "run" and run_id is not None else uuid7()
            mapping[old] = fresh
            mapping[str(old)] = str(fresh)
        return mapping

    def call(self, conn: Any, kind: str, mapping: dict[Any, Any]) -> None:
        import psycopg

        statements = self.statements[kind]
        with conn.transaction() if any(t for _, _, t in statements) else nullcontext():
            # A statement with PostgreSQL's own $n placeholders (none today) goes through a RawCursor.
            with conn.cursor() as client, psycopg.RawCursor(conn) as raw:
                for sql, params, _ in statements:
                    cursor = raw if "%s" not in sql and "$1" in sql else client
                    cursor.execute(sql, _swap(params, mapping))
                    if cursor.description is not None:
                        cursor.fetchall()


def raw_connection(port: int | None = None) -> Any:
    import psycopg

    url = common.bench_database_url()
    # Autocommit, as Django's connections: a call opens a transaction only where the service's did (Replay.call).
    return common.connect(
        url if port is None else common.with_port(url, port), cursor_factory=psycopg.ClientCursor, autocommit=True
    )


# -- the three ways ---------------------------------------------------------------------


def r1_phase(replay: Replay, clients: int, ops: int) -> dict[str, Any]:
    chunks = common.split(common.bulk_runs(ops, SCOPE), clients)
    conns = [raw_connection() for _ in range(clients)]

    def work(i: int) -> list[float]:
        lat: list[float] = []
        for run_id in chunks[i]:
            mapping = replay.ids_for(run_id)
            for kind in ("pause", "resume"):
                t0 = time.perf_counter()
                replay.call(conns[i], kind, mapping)
                lat.append(time.perf_counter() - t0)
        return lat

    try:
        return in_process(clients, ops, work)
    finally:
        for c in conns:
            c.close()


def service_cycle(who: Any, run_id: Any, lat: list[float]) -> None:
    from suspensions import services

    t0 = time.perf_counter()
    suspension = services.suspend_run(
        principal=who,
        run_id=run_id,
        revision=1,
        reason="external_tool",
        pending=common.pending_call(),
        continuation=common.continuation(),
    )
    t1 = time.perf_counter()
    version = services.Version(run_id=run_id, suspension_id=suspension.id, run_revision=2)
    claimed = services.resume_run(principal=who, run_id=run_id, version=version, results=RESULTS)
    t2 = time.perf_counter()
    assert claimed.fresh
    lat += [t1 - t0, t2 - t1]


def s_in_phase(clients: int, ops: int) -> dict[str, Any]:
    from django.db import connection

    who = common.principal(SCOPE, ["engine"])
    chunks = common.split(common.bulk_runs(ops, SCOPE), clients)

    def work(i: int) -> list[float]:
        lat: list[float] = []
        try:
            for run_id in chunks[i]:
                service_cycle(who, run_id, lat)
        finally:
            if clients > 1:
                connection.close()
        return lat

    return in_process(clients, ops, work)


def in_process(clients: int, ops: int, work: Any) -> dict[str, Any]:
    """`work(i)` in `clients` threads of this process (R1, S-in): this process's CPU and PostgreSQL's per cycle."""
    cpu, pg = time.process_time(), common.postgres_cpu()
    return summarise(
        *common.run_threads(clients, work),
        ops,
        client_cpu=time.process_time() - cpu,
        pg_cpu=common.postgres_cpu_since(pg),
    )


def http_cycle(client: common.Client, run_id: Any, lat: list[float]) -> None:
    t0 = time.perf_counter()
    status, body = client.call(
        "POST",
        f"/api/v1/runs/{run_id}/suspend",
        {
            "revision": 1,
            "reason": "external_tool",
            "pending": common.pending_call(),
            "continuation": common.continuation(),
        },
    )
    t1 = time.perf_counter()
    assert status == 201, body[:300]
    suspension_id = body.split(b'"id":"', 1)[1][:36].decode()
    version = {"run_id": str(run_id), "suspension_id": suspension_id, "run_revision": 2}
    status, body = client.call("POST", f"/api/v1/runs/{run_id}/resume", {"version": version, "results": RESULTS})
    t2 = time.perf_counter()
    assert status == 201, body[:300]
    lat += [t1 - t0, t2 - t1]


def floor_cycle(client: common.Client, run_id: Any, lat: list[float]) -> None:
    """F-http: the floor endpoint twice (in place of the pause and the resume), on a registered run."""
    for _ in range(2):
        t0 = time.perf_counter()
        status, body = client.call("GET", f"/api/v1/bench/floor/{run_id}")
        assert status == 200, body[:300]
        lat.append(time.perf_counter() - t0)


def http_phase(server: common.Gunicorn, secret: str, clients: int, ops: int, cycle: Any = http_cycle) -> dict[str, Any]:
    """`ops` cycles over keep-alive connections, `clients` at once (S-http; F-http with `floor_cycle`)."""
    chunks = common.split(common.bulk_runs(ops, SCOPE), clients)
    conns = server.clients(secret, clients)

    def work(i: int) -> list[float]:
        lat: list[float] = []
        for run_id in chunks[i]:
            cycle(conns[i], run_id, lat)
        return lat

    cpu, server_cpu, pg = time.process_time(), server.cpu_seconds(), common.postgres_cpu()
    try:
        wall, latencies = common.run_threads(clients, work)
        return summarise(
            wall,
            latencies,
            ops,
            client_cpu=time.process_time() - cpu,
            server_cpu=server.cpu_seconds() - server_cpu,
            pg_cpu=common.postgres_cpu_since(pg),
        ) | {"busiest_worker_conns": max(server.spread(conns))}
    finally:
        for c in conns:
            c.close()


WARM_CYCLES = 50


def app_phase(secret: str, ops: int, cycle: Any = http_cycle) -> dict[str, Any]:
    """S-app (F-app with `floor_cycle`): S-http's cycles sent to the WSGI application in this process, no server.

    The requests go to `bench.floor_app`'s application as gunicorn calls it
    (bench/cpu.py's `wsgi_local`: the same middleware, views, pool checkout
    and log lines), one after another in one thread, after a warm-up. Its
    CPU per cycle (this thread's, user and system) is what S-http's cycle
    costs the web process with the serving of HTTP taken away: no gunicorn,
    no sockets, no threads waiting on each other for the GIL. `ceilings`
    turns it into the most S-http could reach with a server that cost nothing.
    """
    import cpu

    local = cpu.wsgi_local(secret)
    for run_id in common.bulk_runs(WARM_CYCLES, SCOPE):
        cycle(local, run_id, [])
    run_ids = common.bulk_runs(ops, SCOPE)
    latencies: list[float] = []
    started, cpu_before, pg = time.perf_counter(), time.thread_time(), common.postgres_cpu()
    for run_id in run_ids:
        cycle(local, run_id, latencies)
    return summarise(
        time.perf_counter() - started,
        latencies,
        ops,
        client_cpu=time.thread_time() - cpu_before,
        pg_cpu=common.postgres_cpu_since(pg),
    )


def ceilings(phases: dict[str, list[dict[str, Any]]], clients: int) -> dict[str, str]:
    """S-http and F-http over R1 as if serving HTTP cost nothing, round by round: "median (min-max)".

    A round's HTTP phase kept `cycles/s x (bench + web + PostgreSQL CPU per
    cycle)` of the cores busy. Spent on the same cycle without the server (the
    application's in-process CPU in place of the workers', the same bench and
    PostgreSQL CPU), those cores carry `busy / (app + bench + PostgreSQL)`
    cycles a second. The in-process figure has no thread contention in it, so
    this ceiling is generous to the service.
    """
    out = {}
    for way in ("S", "F"):
        http, app, ref = (phases.get(key, []) for key in (f"{way}-http@{clients}", f"{way}-app@1", f"R1@{clients}"))
        values = []
        for h, a, r in zip(http, app, ref, strict=False):
            beside = h["bench_cpu_ms_per_cycle"] + h["postgres_cpu_ms_per_cycle"]
            busy = h["cycles_per_s"] * (beside + h["web_cpu_ms_per_cycle"])
            values.append(busy / (a["bench_cpu_ms_per_cycle"] + beside) / r["cycles_per_s"])
        if values:
            out[f"{way}-http@{clients} with a server that cost nothing / R1@{clients}"] = common.spread(values)
    return out


def summarise(
    wall: float, latencies: list[float], ops: int, *, client_cpu: float, server_cpu: float = 0.0, pg_cpu: float = 0.0
) -> dict[str, Any]:
    """Throughput, latency, and CPU per cycle: this process's (driver or service), gunicorn's workers' and
    PostgreSQL's (every postgres process of the machine)."""
    pauses, resumes = latencies[0::2], latencies[1::2]
    return {
        "cycles_per_s": round(ops / wall, 1),
        "bench_cpu_ms_per_cycle": round(client_cpu / ops * 1000, 2),
        "web_cpu_ms_per_cycle": round(server_cpu / ops * 1000, 2),
        "postgres_cpu_ms_per_cycle": round(pg_cpu / ops * 1000, 2),
        "pause_p50_ms": common.ms(common.percentile(pauses, 50)),
        "pause_p99_ms": common.ms(common.percentile(pauses, 99)),
        "resume_p50_ms": common.ms(common.percentile(resumes, 50)),
        "resume_p99_ms": common.ms(common.percentile(resumes, 99)),
    }


# -- counting pass ----------------------------------------------------------------------


def counted(proxy: common.CountingProxy, call: Any) -> dict[str, int]:
    before = proxy.snapshot()
    call()
    after = proxy.snapshot()
    return {key: after[key] - before[key] for key in after}


def add(total: dict[str, dict[str, int]], kind: str, counts: dict[str, int]) -> None:
    bucket = total.setdefault(kind, {})
    for key, value in counts.items():
        bucket[key] = bucket.get(key, 0) + value


def count_pass(replay: Replay, url: str, n: int) -> dict[str, Any]:
    """Statements, commits and round trips per pause and per resume, each way, read off the wire."""
    from suspensions import services

    info = common.conninfo(url)
    proxy = common.CountingProxy(info["host"], info["port"])
    out: dict[str, Any] = {}
    try:
        totals: dict[str, dict[str, int]] = {}
        conn = raw_connection(proxy.port)
        for run_id in common.bulk_runs(n, SCOPE):
            mapping = replay.ids_for(run_id)
            for kind in ("pause", "resume"):
                add(totals, kind, counted(proxy, lambda kind=kind: replay.call(conn, kind, mapping)))
        conn.close()
        out["R1"] = totals

        totals = {}
        who = common.principal(SCOPE, ["engine"])
        run_ids = common.bulk_runs(n, SCOPE)
        with common.django_through(proxy.port):
            for run_id in run_ids:
                box: dict[str, Any] = {}
                add(
                    totals,
                    "pause",
                    counted(
                        proxy,
                        lambda run_id=run_id: box.update(
                            s=services.suspend_run(
                                principal=who,
                                run_id=run_id,
                                revision=1,
                                reason="external_tool",
                                pending=common.pending_call(),
                                continuation=common.continuation(),
                            )
                        ),
                    ),
                )
                version = services.Version(run_id=run_id, suspension_id=box["s"].id, run_revision=2)
                add(
                    totals,
                    "resume",
                    counted(
                        proxy,
                        lambda run_id=run_id, version=version: services.resume_run(
                            principal=who, run_id=run_id, version=version, results=RESULTS
                        ),
                    ),
                )
        out["S-in"] = totals

    finally:
        proxy.close()
    return {
        way: {kind: {k: round(v / n, 2) for k, v in c.items()} for kind, c in kinds.items()}
        for way, kinds in out.items()
    }


def http_split_counts(secret: str, url: str, n: int) -> dict[str, Any]:
    """Per-call counts over HTTP: pause and resume counted apart (one client, waiting for each response)."""
    info = common.conninfo(url)
    proxy = common.CountingProxy(info["host"], info["port"])
    totals: dict[str, dict[str, int]] = {}
    try:
        run_ids = common.bulk_runs(n, SCOPE)
        with common.Gunicorn(common.with_port(url, proxy.port), workers=1, threads=1) as server:
            client = common.Client(server.port, secret)
            for run_id in run_ids:
                before = proxy.snapshot()
                status, body = client.call(
                    "POST",
                    f"/api/v1/runs/{run_id}/suspend",
                    {
                        "revision": 1,
                        "reason": "external_tool",
                        "pending": common.pending_call(),
                        "continuation": common.continuation(),
                    },
                )
                mid = proxy.snapshot()
                suspension_id = body.split(b'"id":"', 1)[1][:36].decode()
                version = {"run_id": str(run_id), "suspension_id": suspension_id, "run_revision": 2}
                client.call("POST", f"/api/v1/runs/{run_id}/resume", {"version": version, "results": RESULTS})
                # The worker returns its connection after the response is written: wait for the wire to settle.
                time.sleep(0.01)
                after = proxy.snapshot()
                add(totals, "pause", {k: mid[k] - before[k] for k in mid})
                add(totals, "resume", {k: after[k] - mid[k] for k in after})
            client.close()
    finally:
        proxy.close()
    return {kind: {k: round(v / n, 2) for k, v in c.items()} for kind, c in totals.items()}


# -- main ---------------------------------------------------------------------------------


def main() -> dict[str, Any]:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=300, help="cycles per phase at one client (x2 at more clients)")
    p.add_argument("--clients", default="1,8,32")
    p.add_argument("--count-ops", type=int, default=100)
    p.add_argument("--workers", type=int, default=2, help="gunicorn workers (gthread)")
    p.add_argument("--threads", type=int, default=16, help="threads per gunicorn worker")
    args = p.parse_args()
    url = common.setup_django()
    common.reset_tables()
    levels = [int(c) for c in args.clients.split(",")]
    secret = common.make_token(SCOPE, ["engine"], "bench-engine")
    replay = capture_templates()

    phases: dict[str, list[dict[str, Any]]] = {}
    with common.Gunicorn(url, workers=args.workers, threads=args.threads, app="bench.floor_app:application") as server:
        plan = [("R1", c) for c in levels] + [("S-in", c) for c in levels if c <= 8]
        plan += [(way, c) for c in levels for way in ("S-http", "F-http")]
        plan += [("S-app", 1), ("F-app", 1)]
        for round_no in range(args.rounds):
            common.between_rounds(url, round_no + 1)
            # Rotate the order each round so no way always runs first (warm caches, autovacuum).
            order = plan[round_no % len(plan) :] + plan[: round_no % len(plan)]
            for way, clients in order:
                ops = args.ops if clients == 1 else args.ops * 2
                if way == "R1":
                    result = r1_phase(replay, clients, ops)
                elif way == "S-in":
                    result = s_in_phase(clients, ops)
                elif way.endswith("-app"):
                    result = app_phase(secret, ops, floor_cycle if way == "F-app" else http_cycle)
                else:
                    result = http_phase(server, secret, clients, ops, floor_cycle if way == "F-http" else http_cycle)
                phases.setdefault(f"{way}@{clients}", []).append(result)
                print(f"round {round_no + 1} {way}@{clients}: {result}", flush=True)
    figures = {key: {k: round(common.median([r[k] for r in runs]), 3) for k in runs[0]} for key, runs in phases.items()}
    counts = count_pass(replay, url, args.count_ops)
    counts["S-http"] = http_split_counts(secret, url, args.count_ops)
    data = {
        "machine": common.machine(),
        "args": vars(args),
        "figures": figures,
        "rounds": phases,
        "ratios": common.round_ratios(phases, "R1", "cycles_per_s")
        | common.round_ratios(
            {k: v for k, v in phases.items() if k.startswith(("S-http", "F-http"))}, "F-http", "cycles_per_s"
        )
        | {key: value for c in levels for key, value in ceilings(phases, c).items()},
        "counts": counts,
        "statements": {kind: [sql for sql, _p, _m in stmts] for kind, stmts in replay.statements.items()},
    }
    common.write_result("resume", data, markdown(data))
    return data


def markdown(data: dict[str, Any]) -> str:
    rows = [
        [key, *fig.values()] + ([] if "busiest_worker_conns" in fig else ["-"]) for key, fig in data["figures"].items()
    ]
    lines = [
        f"### Resume path ({data['args']['rounds']} rounds, median; {data['args']['ops']} cycles per phase at 1 client, twice that above)",
        "",
        common.table(
            [
                "way@clients",
                "cycles/s",
                "bench process CPU ms/cycle",
                "gunicorn CPU ms/cycle",
                "PostgreSQL CPU ms/cycle",
                "pause p50 ms",
                "pause p99 ms",
                "resume p50 ms",
                "resume p99 ms",
                "connections on the busiest worker",
            ],
            rows,
        ),
        "",
        common.table(["ratio (per round)", "median (min-max)"], [[k, v] for k, v in data["ratios"].items()]),
        "",
        f"Counts per call ({data['args']['count_ops']} cycles through the counting proxy):",
        "",
    ]
    count_rows = []
    for way, kinds in data["counts"].items():
        for kind, c in kinds.items():
            count_rows.append([way, kind, c["statements"], c["commits"], c["begins"], c["round_trips"], c["checks"]])
    lines.append(
        common.table(["way", "call", "statements", "commits", "begins", "round trips", "pool checks"], count_rows)
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
