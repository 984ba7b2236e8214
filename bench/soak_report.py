"""The soak's figures (bench/soak.py): per minute, per call kind, the goals, and the markdown for docs/benchmarks.md."""

import math
import statistics
from typing import Any

import common

CORES = ("machine", "gunicorn", "postgres", "celery", "bench")
Call = tuple[float, str, float, int, bool]  # (seconds into the soak, kind, latency, status, expected)


def bucket_of(at: float, size: float, count: int) -> int:
    return max(0, min(int(at // size), count - 1))


def latencies(calls: list[Call]) -> dict[str, float]:
    values = [c[2] for c in calls]
    return {
        "p50_ms": round(common.percentile(values, 50) * 1000, 1),
        "p99_ms": round(common.percentile(values, 99) * 1000, 1),
    }


def mean(samples: list[dict[str, Any]], key: str) -> float:
    return round(statistics.fmean(s[key] for s in samples), 1) if samples else 0.0


def cores(samples: list[dict[str, Any]], before: dict[str, Any] | None, key: str) -> float:
    """CPU cores a process used over the minute: its CPU seconds over the wall seconds between samples."""
    if not samples:
        return 0.0
    start = before or {"at": 0.0, key: samples[0][key]}
    wall = samples[-1]["at"] - start["at"]
    return round((samples[-1][key] - start[key]) / wall, 2) if wall > 0 else 0.0


def minute_rows(book: Any, minutes: float, load_seconds: float, lags: dict[str, Any]) -> list[dict[str, Any]]:
    count = max(1, math.ceil(minutes))
    calls_by: list[list[Call]] = [[] for _ in range(count)]
    for c in book.calls:
        calls_by[bucket_of(c[0], 60, count)].append(c)
    rows, before = [], None
    for m, calls in enumerate(calls_by):
        done = sum(1 for at, _name in book.finished if bucket_of(at, 60, count) == m)
        samples = [s for s in book.samples if bucket_of(s["at"] - 1e-6, 60, count) == m]
        span = max(1e-9, min(60.0, load_seconds - m * 60))
        sweep = [lag for at, lag in lags["sweep"] if bucket_of(at, 60, count) == m]
        push = [lag for at, lag in lags["push"] if bucket_of(at, 60, count) == m]
        made = sum(1 for at in lags["made"] if bucket_of(at, 60, count) == m and at < load_seconds)
        sent = sum(1 for at, lag in lags["push"] if bucket_of(at + lag, 60, count) == m and at + lag < load_seconds)
        last = samples[-1] if samples else {}
        kinds = sorted({c[1] for c in calls})
        rows.append(
            {
                "minute": m + 1,
                "calls": len(calls),
                "calls_per_s": round(len(calls) / span, 1),
                "runs_per_s": round(done / span, 1),
                **latencies(calls),
                "5xx": sum(1 for c in calls if c[3] >= 500),
                "other_unexpected": sum(1 for c in calls if not c[4] and c[3] < 500),
                "gunicorn_rss_mib": mean(samples, "gunicorn_rss_mib"),
                "celery_rss_mib": mean(samples, "celery_rss_mib"),
                "pg_connections_mean": mean(samples, "pg_connections"),
                "pg_connections_max": max((s["pg_connections"] for s in samples), default=0),
                "load_1min": mean(samples, "load_1min"),
                "cores": {k: cores(samples, before, f"{k}_cpu_s") for k in CORES},
                "webhook_backlog_end": last.get("webhook_backlog"),
                "broker_queue_end": last.get("broker_queue"),
                "oldest_overdue_end_s": last.get("oldest_overdue_s"),
                "webhooks_made_per_s": round(made / span, 1),
                "webhooks_sent_per_s": round(sent / span, 1),
                "delivery_lag_s": {"p50": seconds(push, 50), "p99": seconds(push, 99)},
                "sweep_lag_s": {"p50": seconds(sweep, 50), "max": round(max(sweep, default=0.0), 1)},
                "per_kind": {k: {"calls": len(cs), **latencies(cs)} for k in kinds for cs in [kind_of(calls, k)]},
            }
        )
        before = last or before
    return rows


def kind_of(calls: list[Call], kind: str) -> list[Call]:
    return [c for c in calls if c[1] == kind]


def seconds(values: list[float], q: float) -> float:
    return round(common.percentile(values, q), 1)


def goals(rows: list[dict[str, Any]], total_5xx: int) -> dict[str, dict[str, Any]]:
    """0 5xx; RSS flat (the last minute's within 10% of the second's); p99 steady from the second minute on."""
    out: dict[str, dict[str, Any]] = {"0 5xx": {"measured": f"{total_5xx} 5xx", "met": total_5xx == 0}}
    if len(rows) < 3:
        out["RSS flat"] = {"measured": "needs 3 minutes", "met": None}
        out["p99 steady"] = {"measured": "needs 3 minutes", "met": None}
        return out
    second, last = rows[1], rows[-1]
    drift = (last["gunicorn_rss_mib"] - second["gunicorn_rss_mib"]) / max(second["gunicorn_rss_mib"], 1e-9)
    out["RSS flat"] = {
        "measured": f"gunicorn workers {second['gunicorn_rss_mib']} MiB in minute 2, "
        f"{last['gunicorn_rss_mib']} MiB in minute {last['minute']} ({drift:+.1%})",
        "met": abs(drift) <= 0.10,
    }
    p99s = [r["p99_ms"] for r in rows[1:]]
    spread, trend = max(p99s) / statistics.median(p99s), p99s[-1] / p99s[0]
    out["p99 steady"] = {
        "measured": f"minutes 2-{last['minute']}: worst p99 {spread:.2f}x their median; "
        f"last minute's {trend:.2f}x the second's",
        "met": spread <= 1.5 and trend <= 1.2,
    }
    return out


def summary(book: Any, args: Any, load_seconds: float, lags: dict[str, Any], **extra: Any) -> dict[str, Any]:
    rows = minute_rows(book, args.minutes, load_seconds, lags)
    kinds = sorted({c[1] for c in book.calls})
    per_kind = {k: {"calls": len(cs), **latencies(cs)} for k in kinds for cs in [kind_of(book.calls, k)]}
    scenarios: dict[str, int] = {}
    for _at, name in book.finished:
        scenarios[name] = scenarios.get(name, 0) + 1
    pids = [tuple(s["gunicorn_pids"]) for s in book.samples]
    first, last = (book.samples[0], book.samples[-1]) if book.samples else ({}, {})
    gunicorn_cpu = last.get("gunicorn_cpu_s", 0.0) - first.get("gunicorn_cpu_s", 0.0)
    calls = sum(1 for c in book.calls if first.get("at", 0.0) < c[0] <= last.get("at", 0.0))
    return {
        "args": vars(args),
        "load_seconds": round(load_seconds, 1),
        "minutes": rows,
        "per_kind": per_kind,
        "scenarios": scenarios,
        "runs": len(book.expected),
        "abandoned": dict(list(book.abandoned.items())[:20]),
        "abandoned_count": len(book.abandoned),
        "gunicorn_worker_changes": sum(1 for a, b in zip(pids, pids[1:], strict=False) if a != b),
        "gunicorn_cpu_ms_per_call": round(gunicorn_cpu * 1000 / max(1, calls), 2),
        "goals": goals(rows, sum(r["5xx"] for r in rows)),
        **extra,
        "samples": book.samples,
    }


def swept(liveness: dict[str, Any] | None, args: dict[str, Any]) -> str:
    """The sweep's gaps and /readyz's answers during the load in a sentence, or nothing (an older result)."""
    if not liveness:
        return ""
    autovacuum = " (autovacuum off on the app's tables)" if args.get("autovacuum") == "off" else ""
    answers = ", ".join(f"{n} x {status}" for status, n in sorted(liveness["readyz"].items()))
    return (
        f"During the load{autovacuum}: {liveness['sweeps_seen']} successful sweeps on the sweep's own worker, the "
        f"largest gap between two {liveness['largest_sweep_gap_s']} s, {liveness['sweep_gaps_over_two_intervals']} "
        f"over two intervals; /readyz answered {answers}."
    )


def vacuumed(vacuums: list[dict[str, float]]) -> str:
    """The soak's VACUUMs in a sentence (the server's autovacuum was off), or nothing."""
    if not vacuums:
        return "No VACUUM during the load (autovacuum on, or `--vacuum-seconds 0`)."
    seconds = [v["seconds"] for v in vacuums]
    return (
        f"Autovacuum off: {len(vacuums)} VACUUM (ANALYZE) runs of the app's tables during the load, "
        f"{min(seconds)}-{max(seconds)} s each."
    )


def progress(book: Any, minute: int) -> str:
    calls = [c for c in book.calls if minute - 1 <= c[0] / 60 < minute]
    s = book.samples[-1] if book.samples else {}
    lat = latencies(calls)
    return (
        f"minute {minute}: {len(calls) / 60:.1f} calls/s, p50 {lat['p50_ms']} ms, p99 {lat['p99_ms']} ms, "
        f"unexpected {sum(1 for c in calls if not c[4])}, gunicorn RSS {s.get('gunicorn_rss_mib')} MiB, "
        f"PG connections {s.get('pg_connections')}, webhook backlog {s.get('webhook_backlog')}, "
        f"broker queue {s.get('broker_queue')}, oldest overdue pause {s.get('oldest_overdue_s')} s, "
        f"load {s.get('load_1min')}"
    )


def invariants(groups: dict[str, dict[str, int]]) -> str:
    """One line when every invariant holds (docs/benchmarks.md stays short); a table of the broken ones otherwise."""
    checks = [(group, name, count) for group, named in groups.items() for name, count in named.items()]
    broken = [[group, name, count, "**no**"] for group, name, count in checks if count]
    if not broken:
        names = ", ".join(sorted(groups))
        return f"Invariants: all {len(checks)} hold ({names}; bench/soak_checks.py lists them)."
    return common.table(["group", "invariant: violations", "count", "holds"], broken)


def markdown(data: dict[str, Any]) -> str:
    a, machine = data["args"], data["machine"]
    parts = [
        f"### Soak: {a['minutes']:g} min, {a['clients']} client threads, gunicorn {a['workers']} workers x "
        f"{a['threads']} threads, Celery worker of {a['celery_concurrency']} processes, the sweep's own with the beat, "
        f"sweep every "
        f"{a['sweep_interval']} s ({machine['at']}, {machine['nproc']} cores, "
        f"PostgreSQL {machine['postgresql'].split()[0]})",
        "",
        common.table(
            ["minute", "calls/s", "runs/s", "p50 ms", "p99 ms", "5xx", "other unexpected", "gunicorn RSS MiB",
             "Celery RSS MiB", "PG conns mean / max"],
            [[r["minute"], r["calls_per_s"], r["runs_per_s"], r["p50_ms"], r["p99_ms"], r["5xx"], r["other_unexpected"],
              r["gunicorn_rss_mib"], r["celery_rss_mib"], f"{r['pg_connections_mean']} / {r['pg_connections_max']}"]
             for r in data["minutes"]],
        ),
        "",
        "What else ran, per minute: the load average and the CPU cores busy on the whole machine (this soak and "
        "anything else running), and those used by gunicorn's workers, the bench database's PostgreSQL backends, "
        "the Celery worker and this bench process; webhook events made (by the load) and messages sent (by the "
        "worker; one endpoint, so one message an event); the backlog (pending messages and undispatched outbox "
        "rows) and the broker's queue at the minute's end; a message's delivery after its event; an expiry after "
        "its deadline.",
        "",
        common.table(
            ["minute", "load avg", "cores: machine / gunicorn / PostgreSQL / Celery / bench", "webhooks made / sent per s", "webhook backlog",
             "broker queue", "delivery lag p50 / p99 s", "expiry lag p50 / max s"],
            [[r["minute"], r["load_1min"], " / ".join(str(v) for v in r["cores"].values()),
              f"{r['webhooks_made_per_s']} / {r['webhooks_sent_per_s']}", r["webhook_backlog_end"],
              r["broker_queue_end"], f"{r['delivery_lag_s']['p50']} / {r['delivery_lag_s']['p99']}",
              f"{r['sweep_lag_s']['p50']} / {r['sweep_lag_s']['max']}"]
             for r in data["minutes"]],
        ),
        "",
    ]  # fmt: skip
    kind_rows = []
    for kind, fig in data["per_kind"].items():
        p99s = [str(r["per_kind"].get(kind, {}).get("p99_ms", "")) for r in data["minutes"]]
        kind_rows.append([kind, fig["calls"], fig["p50_ms"], fig["p99_ms"], " / ".join(p99s)])
    parts += [common.table(["call", "calls", "p50 ms", "p99 ms", "p99 ms minute by minute"], kind_rows), ""]
    scenarios = ", ".join(f"{n} {k}" for k, n in sorted(data["scenarios"].items()))
    drained = data["drained"]
    parts += [
        f"{data['runs']} runs driven ({scenarios}); {data['abandoned_count']} left off after an unexpected answer; "
        f"gunicorn worker restarts: {data['gunicorn_worker_changes']}. After the load the sweep caught up in "
        f"{drained['sweep_seconds']} s and the webhooks in {drained['webhook_seconds']} s more (-1: not within "
        f"the wait); the receiver saw {data['webhook_messages_seen']} messages in {data['webhook_posts']} posts. "
        f"CPU: gunicorn's workers {data['gunicorn_cpu_ms_per_call']} ms a call; the Celery worker "
        f"{data['celery_cpu_ms_per_message']} ms a webhook message (fan-out, delivery, the sweep and beat included). "
        f"{vacuumed(data.get('vacuums', []))} {swept(data.get('liveness'), data['args'])}",
        "",
    ]
    parts += [invariants(data["invariants"]), ""]
    met = {True: "met", False: "**not met**", None: "n/a"}
    goal_rows = [[g, v["measured"], met[v["met"]]] for g, v in data["goals"].items()]
    parts.append(common.table(["goal", "measured", ""], goal_rows))
    return "\n".join(parts)
