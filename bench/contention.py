"""Issue 8.3: contention. K resumers released together (a Barrier) on each of N pauses, K in 2, 8, 32, 64.

Every resumer sends its own results, so exactly one wins (201) and every
other one must get 409 admission_conflict and nothing else. Reported per K:
winners per pause (must be exactly 1 for every pause), the losers' codes,
winner and loser latency from the release, and deadlocks (must be 0: the
exceptions seen plus pg_stat_database.deadlocks over the run).

64 racers need 65 connections, more than a shared server can spare, so by
default the bench runs on a private PostgreSQL (bench/private_pg.py, same
binaries, max_connections 200); `--shared` uses the bench database instead.

    .venv/bin/python bench/contention.py [--pauses 1000] [--racers 2,8,32,64] [--shared]
"""

import os
import threading
import time
from collections import Counter
from typing import Any

import common

SCOPE = "bench-race"


def make_pauses(n: int) -> list[Any]:
    from suspensions import services

    who = common.principal(SCOPE, ["engine"])
    out = []
    for run_id in common.bulk_runs(n, SCOPE):
        s = services.suspend_run(
            principal=who,
            run_id=run_id,
            revision=1,
            reason="external_tool",
            pending=common.pending_call(),
            continuation=common.continuation(),
        )
        out.append(services.Version(run_id=run_id, suspension_id=s.id, run_revision=2))
    return out


def is_deadlock(exc: BaseException) -> bool:
    cause = exc.__cause__ or exc
    return getattr(cause, "sqlstate", None) == "40P01" or "deadlock" in str(exc).lower()


def race(versions: list[Any], racers: int) -> dict[str, Any]:
    from django.db import connection

    from suspensions import services
    from suspensions.exceptions import ServiceError

    who = common.principal(SCOPE, ["engine"])
    barrier = threading.Barrier(racers)
    outcomes: list[list[tuple[str, float]]] = [[] for _ in range(racers)]
    deadlocks: list[str] = []

    def racer(i: int) -> None:
        results = [{"call_id": "c1", "content": {"racer": i}}]
        try:
            for version in versions:
                barrier.wait()
                t0 = time.perf_counter()
                try:
                    claimed = services.resume_run(
                        principal=who, run_id=version.run_id, version=version, results=results
                    )
                    outcome = "win" if claimed.fresh else "replay"
                except ServiceError as exc:
                    outcome = exc.code
                except Exception as exc:  # noqa: BLE001 - counted, never hidden
                    outcome = "deadlock" if is_deadlock(exc) else f"error:{exc.__class__.__name__}"
                    if outcome == "deadlock":
                        deadlocks.append(str(exc))
                outcomes[i].append((outcome, time.perf_counter() - t0))
        finally:
            connection.close()

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(racers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    per_pause = [sum(1 for i in range(racers) if outcomes[i][j][0] == "win") for j in range(len(versions))]
    codes = Counter(o for row in outcomes for o, _ in row)
    won = [lat for row in outcomes for o, lat in row if o == "win"]
    lost = [lat for row in outcomes for o, lat in row if o != "win"]
    return {
        "racers": racers,
        "pauses": len(versions),
        "pauses_with_exactly_one_winner": sum(1 for w in per_pause if w == 1),
        "max_winners_on_a_pause": max(per_pause),
        "min_winners_on_a_pause": min(per_pause),
        "outcomes": dict(codes),
        "winner_p50_ms": common.ms(common.percentile(won, 50)),
        "winner_p99_ms": common.ms(common.percentile(won, 99)),
        "loser_p50_ms": common.ms(common.percentile(lost, 50)),
        "loser_p99_ms": common.ms(common.percentile(lost, 99)),
        "loser_p99_over_winner_p99": round(common.percentile(lost, 99) / max(common.percentile(won, 99), 1e-9), 2),
        "deadlock_exceptions": len(deadlocks),
        "wall_s": round(wall, 1),
    }


def server_deadlocks() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def main() -> dict[str, Any]:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--pauses", type=int, default=1000)
    p.add_argument("--racers", default="2,8,32,64")
    p.add_argument("--shared", action="store_true", help="use the bench database on the shared server")
    args = p.parse_args()
    levels = [int(k) for k in args.racers.split(",")]
    os.environ["DB_POOL_MAX"] = str(max(levels) + 8)
    server = None
    if args.shared:
        url = common.bench_database_url()
    else:
        from private_pg import PrivatePostgres

        server = PrivatePostgres()
        url = server.createdb("suspensions_bench")
    try:
        common.setup_django(url)
        common.reset_tables()
        before = server_deadlocks()
        rows = []
        for racers in levels:
            versions = make_pauses(args.pauses)
            result = race(versions, racers)
            print(result, flush=True)
            rows.append(result)
        deadlocks = server_deadlocks() - before
        data = {"machine": common.machine(), "args": vars(args), "server_deadlocks": deadlocks, "levels": rows}
    finally:
        from django.db import connection

        connection.close()
        connection.close_pool()
        if server is not None:
            server.close()
    md = "\n".join(
        [
            f"### Contention ({args.pauses} pauses per level; {'shared bench database' if args.shared else 'private PostgreSQL'})",
            "",
            common.table(
                [
                    "racers",
                    "pauses with exactly 1 winner",
                    "max winners",
                    "outcomes",
                    "winner p99 ms",
                    "loser p50 ms",
                    "loser p99 ms",
                    "loser p99 / winner p99",
                    "deadlocks",
                ],
                [
                    [
                        r["racers"],
                        f"{r['pauses_with_exactly_one_winner']} / {r['pauses']}",
                        r["max_winners_on_a_pause"],
                        ", ".join(f"{k}: {v}" for k, v in sorted(r["outcomes"].items())),
                        r["winner_p99_ms"],
                        r["loser_p50_ms"],
                        r["loser_p99_ms"],
                        r["loser_p99_over_winner_p99"],
                        r["deadlock_exceptions"],
                    ]
                    for r in rows
                ],
            ),
            "",
            f"Deadlocks counted by the server over the whole run (pg_stat_database): {deadlocks}.",
        ]
    )
    common.write_result("contention", data, md)
    return data


if __name__ == "__main__":
    main()
