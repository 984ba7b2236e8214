"""Issue 13: push (docs/api.md, "8. Push: webhooks"): what the outbox costs a transition, and how fast deliveries leave.

Figures, all from one run:

- (a) statements per transition, read from Django's own record of each
  statement (`CaptureQueriesContext`) and off the PostgreSQL wire (the
  counting proxy): suspend for approval, approve, deny, complete. The outbox's
  share is the statements that touch `suspensions_outboxevent` (goal: 1);
  "without" is the same transition minus those.
- (b) delivery throughput to a local receiver (an `http.server` thread
  answering 200) through a real Celery worker on Redis with 1 and 4 worker
  processes: `--events` transitions are committed while the worker is down,
  then the worker starts and drains them; deliveries/s is counted from the
  first receipt to the last, so the worker's start-up is not in it. Then the
  end-to-end latency from a transition's commit to the receiver getting its
  message (p50, p99) at a steady `--rate`, next to the poll interval an
  engine would need for the same latency (a poller sees an event after half
  its interval at the median, 0.99 of it at p99).
- (c) backlog drain: `--backlog` events queued while no worker runs, then
  the time from the worker's start to the last delivery.
- (d) with `--chain K`: a chained backlog drain, `--chain-runs` runs of K
  messages each (an endpoint wanting every type, so a run's messages wait on
  each other), with the delivery tasks the worker ran per delivered message
  (its `stats`). `--chain-only` takes only this one (results as push-chain).

Every event is a real transition (T8 complete of a registered run, which
announces `run.finished`): the outbox row, the fan-out and the delivery are
the service's own (`suspensions.tasks.*`), nothing is simulated.

    BENCH_BROKER_URL=redis://127.0.0.1:6379/14 .venv/bin/python bench/push.py \
        [--ops 50] [--events 1000] [--rate 5] [--latency-events 200] [--backlog 10000] [--workers 1,4] \
        [--chain 4 --chain-runs 500 [--chain-only]]
"""

import os
import sys
import time
from typing import Any

import common
from push_harness import SCOPE, Receiver, Worker, broker_url, endpoint, purge, tasks_run
from push_statements import statements

PUSH_TABLES = [
    "suspensions_deliveryattempt",
    "suspensions_webhookmessage",
    "suspensions_webhookendpoint",
    "suspensions_outboxevent",
    "suspensions_membership",
]
DELIVER_TASK = "suspensions.tasks.deliver_endpoint"


def reset() -> None:
    from django.db import connection

    common.reset_tables()
    name = connection.settings_dict["NAME"]
    if not name.endswith("bench"):
        raise SystemExit(f"refusing to empty {name!r}: bench databases end in 'bench'")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE " + ", ".join(PUSH_TABLES))


def missing_parts() -> list[str]:
    """What of the delivery side is not there yet (the bench needs its tasks and the outbox writes)."""
    import suspensions.tasks  # noqa: F401 - registers the tasks
    from suspensions_project.celery import app

    missing = [] if DELIVER_TASK in app.tasks else [DELIVER_TASK]
    return missing


# -- the phases: events committed with no worker or at a steady rate, then delivered -------


def commit_events(n: int, rate: float = 0.0) -> dict[str, float]:
    """`n` T8 completes of fresh runs (each announces run.finished); returns run id -> commit time.

    With a rate, one every 1/rate seconds (a steady load for the latency figure); else as fast as possible.
    """
    from suspensions import services

    who = common.principal(SCOPE, ["engine"])
    committed: dict[str, float] = {}
    gap = 1 / rate if rate else 0.0
    began = time.monotonic()
    for i, run_id in enumerate(common.bulk_runs(n, SCOPE)):
        if gap:
            pause = began + i * gap - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        services.complete_run(principal=who, run_id=run_id, revision=1)
        committed[str(run_id)] = time.time()
    return committed


def commit_chains(runs: int, chain: int) -> None:
    """`runs` runs announcing `chain` events each (1 + 3c): c cycles of suspend for approval, approve, start, then complete.

    A cycle announces approval.requested (the suspend), approval.decided and
    admission.created (the approve, one transaction); the complete, run.finished.
    """
    from suspensions import services

    who = common.principal(SCOPE, ["engine", "approver"])
    for run_id in common.bulk_runs(runs, SCOPE):
        revision = 1
        for _ in range((chain - 1) // 3):
            s = suspend_at(who, run_id, revision)
            version = services.Version(run_id=run_id, suspension_id=s.id, run_revision=s.run.revision)
            claimed = services.approve(principal=who, suspension_id=s.id, version=version)
            revision = services.start_admission(principal=who, admission_id=claimed.admission.id).run.revision
        services.complete_run(principal=who, run_id=run_id, revision=revision)


def suspend_at(who: Any, run_id: Any, revision: int) -> Any:
    from suspensions import services

    pending, continuation = common.pending_call(), common.continuation()
    return services.suspend_run(
        principal=who, run_id=run_id, revision=revision, reason="approval", pending=pending, continuation=continuation
    )


def chained_drain(receiver: Receiver, processes: int, runs: int, chain: int, timeout: float) -> dict[str, Any]:
    """`runs` chains of `chain` messages each queued with no worker (an endpoint wanting every type), then drained."""
    fresh(receiver, event_types=[])
    commit_chains(runs, chain)
    messages = runs * chain
    worker = Worker(processes)
    try:
        done = receiver.wait_for(messages, timeout)
        tasks = tasks_run(worker)
    finally:
        worker.stop()
    times = receiver.times()
    span = times[-1] - times[0] if times else 0.0
    deliveries = tasks.get(DELIVER_TASK, 0)
    return {
        "processes": processes,
        "runs": runs,
        "chain": chain,
        "delivered": len(times),
        "posts": receiver.posts,
        "complete": done,
        "per_second": round((len(times) - 1) / span, 1) if span > 0 else None,
        "seconds_from_start": round(times[-1] - worker.started, 2) if times else None,
        "delivery_tasks": deliveries,
        "tasks_per_delivered": round(deliveries / len(times), 2) if times else None,
        "fan_out_tasks": tasks.get("suspensions.tasks.fan_out_outbox", 0),
    }


def fresh(receiver: Receiver, event_types: list[str] | None = None) -> None:
    reset()
    purge()
    receiver.clear()
    endpoint(receiver, event_types)


def drain(receiver: Receiver, processes: int, events: int, timeout: float) -> dict[str, Any]:
    """`events` queued with no worker, then a worker of `processes` processes drains them."""
    fresh(receiver)
    commit_events(events)
    worker = Worker(processes)
    try:
        done = receiver.wait_for(events, timeout)
    finally:
        worker.stop()
    times = receiver.times()
    if not times:
        return {"processes": processes, "events": events, "delivered": 0, "complete": False}
    span = times[-1] - times[0]
    return {
        "processes": processes,
        "events": events,
        "delivered": len(times),
        "posts": receiver.posts,
        "complete": done,
        "per_second": round((len(times) - 1) / span, 1) if span > 0 else None,
        "seconds_from_start": round(times[-1] - worker.started, 2),
        "seconds_first_to_last": round(span, 2),
    }


def latency(receiver: Receiver, processes: int, events: int, rate: float) -> dict[str, Any]:
    """Commit-to-receipt latency at a steady `rate` with a running worker."""
    from suspensions_project.celery import app

    fresh(receiver)
    worker = Worker(processes)
    try:
        deadline = time.monotonic() + 60
        while not app.control.ping(destination=[worker.name], timeout=1.0) and time.monotonic() < deadline:
            pass
        commit_events(5)  # warm the worker's connections: not measured
        receiver.wait_for(5, 60)
        receiver.clear()
        committed = commit_events(events, rate)
        receiver.wait_for(events, 60 + events / max(rate, 1))
    finally:
        worker.stop()
    arrived = receiver.by_run()
    lat = [arrived[run] - at for run, at in committed.items() if run in arrived]
    p50, p99 = common.percentile(lat, 50), common.percentile(lat, 99)
    return {
        "processes": processes,
        "events": events,
        "rate": rate,
        "delivered": len(lat),
        "p50_ms": common.ms(p50),
        "p99_ms": common.ms(p99),
        "max_ms": common.ms(max(lat, default=0.0)),
        # A poller with interval T sees an event T/2 late at the median and 0.99 T late at p99.
        "poll_interval_for_p50_ms": common.ms(2 * p50),
        "poll_interval_for_p99_ms": common.ms(p99 / 0.99),
    }


# -- report ----------------------------------------------------------------------------------


def chain_report(data: dict[str, Any]) -> list[str]:
    first = data["chained"][0]
    title = (
        f"### Chained backlog drain ({first['runs']} runs x {first['chain']} messages, one endpoint wanting every type)"
    )
    rows = [
        [
            d["processes"],
            d["delivered"],
            d["seconds_from_start"],
            d["per_second"],
            d["tasks_per_delivered"],
            d["complete"],
        ]
        for d in data["chained"]
    ]
    headers = ["worker processes", "delivered", "worker start to last (s)", "deliveries/s", "delivery tasks / message"]
    return ["", title, "", common.table([*headers, "all"], rows)]


def report(data: dict[str, Any]) -> str:
    if "throughput" not in data and data.get("chained"):
        return "\n".join(chain_report(data)[1:])
    parts = ["### Push: the outbox's statements per transition (goal: 1)", ""]
    rows = [
        [k, v["statements"], v["outbox"], v["without_outbox"], v.get("wire_statements", ""), v.get("round_trips", "")]
        for k, v in data["statements"].items()
    ]
    headers = ["transition", "statements", "outbox", "without outbox", "on the wire", "round trips"]
    parts.append(common.table(headers, rows))
    if data.get("missing"):
        parts += ["", f"Delivery figures not taken: {', '.join(data['missing'])} is not there yet."]
        return "\n".join(parts)
    parts += ["", f"### Delivery to a local receiver ({data['events']} run.finished events queued, then drained)", ""]
    rows = [
        [d["processes"], d["delivered"], d.get("per_second"), d.get("seconds_first_to_last"), d["complete"]]
        for d in data["throughput"]
    ]
    parts.append(common.table(["worker processes", "delivered", "deliveries/s", "first to last (s)", "all"], rows))
    parts += ["", f"### Commit to receipt ({data['latency'][0]['events']} events at {data['rate']}/s)", ""]
    rows = [
        [
            d["processes"],
            d["delivered"],
            d["p50_ms"],
            d["p99_ms"],
            d["poll_interval_for_p50_ms"],
            d["poll_interval_for_p99_ms"],
        ]
        for d in data["latency"]
    ]
    headers = ["worker processes", "delivered", "p50 ms", "p99 ms", "poll interval for that p50 ms", "for that p99 ms"]
    parts.append(common.table(headers, rows))
    parts += ["", f"### Backlog drain ({data['backlog']} queued messages)", ""]
    rows = [
        [d["processes"], d["delivered"], d.get("seconds_from_start"), d.get("per_second"), d["complete"]]
        for d in data["drain"]
    ]
    parts.append(
        common.table(["worker processes", "delivered", "worker start to last (s)", "deliveries/s", "all"], rows)
    )
    if data.get("chained"):
        parts += chain_report(data)
    return "\n".join(parts)


def main() -> int:
    p = common.parser(__doc__.split("\n\n")[0])
    p.add_argument("--ops", type=int, default=50, help="transitions of each kind for the statement counts")
    p.add_argument("--events", type=int, default=1000)
    p.add_argument(
        "--rate", type=float, default=5.0, help="events/s for the latency figure: below what 1 process drains"
    )
    p.add_argument("--latency-events", type=int, default=200)
    p.add_argument("--backlog", type=int, default=10000)
    p.add_argument("--workers", default="1,4")
    p.add_argument("--chain", type=int, default=0, help="messages per run (1, 4, 7...) of a chained backlog drain")
    p.add_argument("--chain-runs", type=int, default=500, help="runs of the chained backlog drain")
    p.add_argument("--chain-only", action="store_true", help="take only the chained drain (results as push-chain)")
    args = p.parse_args()
    if args.chain and (args.chain - 1) % 3:
        raise SystemExit("--chain is 1 + 3c: 1, 4, 7, ...")
    os.environ["CELERY_BROKER_URL"] = broker_url()
    # One INFO line per transition would drown the figures.
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    common.setup_django()
    reset()
    data: dict[str, Any] = {"machine": common.machine(), "broker": broker_url(), "ops": args.ops}
    data["missing"] = missing_parts()
    if not args.chain_only:
        data["statements"] = statements(args.ops)
    if not data["missing"]:
        workers = [int(w) for w in args.workers.split(",")]
        data.update(events=args.events, rate=args.rate, backlog=args.backlog)
        receiver = Receiver()
        try:
            if not args.chain_only:
                data["throughput"] = [drain(receiver, n, args.events, 300) for n in workers]
                data["latency"] = [latency(receiver, n, args.latency_events, args.rate) for n in workers]
                data["drain"] = [drain(receiver, n, args.backlog, 1800) for n in workers[-1:]]
            if args.chain:
                data["chained"] = [chained_drain(receiver, n, args.chain_runs, args.chain, 1800) for n in workers]
        finally:
            receiver.close()
            reset()
            purge()
    # A chained drain alone is written apart: docs/benchmarks.md's push block keeps the full run's figures.
    common.write_result("push-chain" if args.chain_only else "push", data, report(data))
    return 1 if data["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
