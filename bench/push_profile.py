"""Issue 33: where a webhook message's CPU goes, in the worker that delivers a backlog.

Two measures of the same backlog (`--events` T8 completes of fresh runs, each
announcing `run.finished`, to one endpoint: a local `http.server` receiver
answering 200):

- in process, under cProfile: the fan-out (`outbox.fan_out`, batches of its
  own size) and then the beat's delivery pass (`delivery.deliver_due`), the
  broker left out (enqueues are counted, not sent); CPU seconds per message
  for each, and the functions that take the delivery's CPU, by own time;
- through a real Celery worker (`--processes`, prefork) on Redis started on
  the backlog: the CPU its process tree used from the first message received
  to the last, per message (what the soak's "CPU per message" counts: Celery's
  own per-task cost, the fan-out and the delivery together).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/suspensions BENCH_BROKER_URL=redis://127.0.0.1:6379/14 \\
        .venv/bin/python bench/push_profile.py [--events 2000] [--processes 2] [--top 25]
"""

import cProfile
import io
import os
import pstats
import time
from typing import Any

import common
from push import commit_events, fresh
from push_harness import Receiver, Worker, broker_url, tasks_run
from soak_watch import tree

# The parts a delivery's CPU is split into (the profile's cumulative time of each, as a share of the pass).
PARTS = {
    "claim (statement, unsealing)": ("delivery.py", "claim"),
    "address check (getaddrinfo)": ("outbound.py", "checked_address"),
    "signature (HMAC)": ("outbound.py", "signature_headers"),
    "httpx client built and closed": ("_client.py", "__init__"),
    "httpx POST": ("_client.py", "post"),
    # The code before issue 33 recorded each message in `settle`; since, a batch in `record`.
    "record and settle": ("delivery.py", "settle"),
    "record and settle (batch)": ("delivery.py", "record"),
    "Celery enqueues": ("outbox.py", "enqueue_delivery"),
}


def backlog_in_process(receiver: Receiver, events: int, profile: cProfile.Profile | None) -> tuple[float, float, int]:
    """(fan-out CPU s, delivery CPU s, enqueues): `events` committed, fanned out, then delivered by the beat's pass."""
    from celery import current_app

    from suspensions.services import delivery, outbox

    fresh(receiver)
    commit_events(events)
    sent: list[str] = []
    real = current_app.send_task
    current_app.send_task = lambda name, *a, **k: sent.append(name)  # type: ignore[method-assign]
    try:
        began = time.process_time()
        while outbox.fan_out().dispatched:
            pass
        fan_out_cpu = time.process_time() - began
        began = time.process_time()
        if profile is not None:
            profile.enable()
        delivery.deliver_due(max_seconds=600)
        if profile is not None:
            profile.disable()
        return fan_out_cpu, time.process_time() - began, len(sent)
    finally:
        current_app.send_task = real  # type: ignore[method-assign]


def in_process(receiver: Receiver, events: int, top: int) -> dict[str, Any]:
    """CPU per message of the fan-out and the delivery (unprofiled), then a profiled pass split into PARTS."""
    fan_out_cpu, deliver_cpu, enqueued = backlog_in_process(receiver, events, None)
    delivered = receiver.count()
    profile = cProfile.Profile(time.process_time)  # CPU, not wall: waits on the network are not its cost
    backlog_in_process(receiver, events, profile)
    stats = pstats.Stats(profile)
    total = max(row[3] for row in stats.stats.values())  # type: ignore[attr-defined]
    shares = {}
    for part, (file, name) in PARTS.items():
        cumulative = sum(
            row[3]
            for (path, _, function), row in stats.stats.items()  # type: ignore[attr-defined]
            if path.endswith(file) and function == name
        )
        shares[part] = f"{100 * cumulative / total:.0f}%"
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(top)
    return {
        "events": events,
        "delivered": delivered,
        "fan_out_cpu_ms_per_message": round(fan_out_cpu * 1000 / max(1, events), 3),
        "delivery_cpu_ms_per_message": round(deliver_cpu * 1000 / max(1, delivered), 3),
        "tasks_enqueued": enqueued,
        "shares_of_delivery_cpu_profiled": shares,
        "profile": out.getvalue(),
    }


def through_worker(receiver: Receiver, events: int, processes: int) -> dict[str, Any]:
    """The same backlog drained by a real worker: its process tree's CPU from the first receipt to the last."""
    fresh(receiver)
    commit_events(events)
    worker = Worker(processes)
    try:
        while receiver.count() == 0 and worker.process.poll() is None:
            time.sleep(0.01)
        cpu_first, first = common.cpu_seconds(tree(worker.process.pid)), receiver.count()
        done = receiver.wait_for(events, 600)
        cpu_last = common.cpu_seconds(tree(worker.process.pid))
        tasks = tasks_run(worker)
    finally:
        worker.stop()
    times = receiver.times()
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    counted = receiver.count() - first
    return {
        "processes": processes,
        "events": events,
        "delivered": receiver.count(),
        "complete": done,
        "per_second": round((len(times) - 1) / span, 1) if span else None,
        "worker_cpu_ms_per_message": round((cpu_last - cpu_first) * 1000 / max(1, counted), 2),
        "tasks_run": {name.rsplit(".", 1)[-1]: n for name, n in tasks.items()},
    }


def main() -> None:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=2000)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    os.environ["CELERY_BROKER_URL"] = broker_url()
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("WEBHOOK_ALLOW_PRIVATE", "1")
    common.setup_django()
    receiver = Receiver()
    try:
        local = in_process(receiver, args.events, args.top)
        worker = through_worker(receiver, args.events, args.processes)
    finally:
        receiver.close()
    print(local.pop("profile"))
    print({**local, "load_1min": round(os.getloadavg()[0], 2)})
    print(worker)


if __name__ == "__main__":
    main()
