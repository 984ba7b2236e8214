"""Waiting without webhooks at scale: how much memory one ASGI process needs per waiter, and how soon a waiter
hears of a change (docs/api.md, "Waiting without webhooks").

One uvicorn process (suspensions_project.asgi) on the bench database. `--runs` running runs; `--waiters` long
polls (`GET /runs/{id}/wait?after_revision=1&timeout=60`) spread over them, held open at once by this process's
event loop. The server's resident memory is read from /proc idle (after a warm-up) and with every waiter held;
then `--wakes` runs are paused one after another (a transition through the services, in a thread), and each of
their waiters records how long after that commit its answer arrived.

With `--decide`, the runs are paused for approval first and each wake is an approver's decision (approve through
the services, as the API's decide calls them): how soon an engine that waits, with no webhook receiver, hears of the
decision (docs/api.md, "Waiting without webhooks").

    .venv/bin/python bench/waiters.py [--waiters 10000] [--runs 1000] [--wakes 50] [--decide]
"""

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def start_uvicorn(url: str) -> tuple[subprocess.Popen[bytes], int]:
    port = common.free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", "bench-only-secret"),
        "AUDIT_SIGNING_KEY": os.environ.get("AUDIT_SIGNING_KEY", common.BENCH_AUDIT_KEY),
        "DB_POOL_MIN": "1",
        "DB_POOL_MAX": "10",
        "LOG_LEVEL": "WARNING",
    }
    command = [str(ROOT / ".venv" / "bin" / "uvicorn"), "suspensions_project.asgi:application", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--lifespan", "off", "--no-access-log", "--log-level", "warning"]
    command += ["--backlog", "4096", "--timeout-keep-alive", "120"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):  # noqa: S310 - ours
                return process, port
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("uvicorn did not come up")


async def wait_once(port: int, token: str, run_id: str, timeout: int, answered: dict[str, list[float]]) -> None:
    """One long poll on `run_id` past its revision now (the run as it is, at once, with timeout 0)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        f"GET /api/v1/runs/{run_id}/wait?timeout={timeout} HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    try:
        status = await reader.readline()
        rest = await reader.read()
        if b" 200 " not in status and os.environ.get("WAITERS_DEBUG"):
            print(status, rest[-300:], file=sys.stderr)
        if b" 200 " in status:
            answered.setdefault(run_id, []).append(time.monotonic())
    finally:
        writer.close()


def waiting(port: int) -> int:
    """The server's own count of parked long polls (the suspensions_waiters gauge of /metrics); 0 while the scrape
    waits behind thousands of arriving long polls (the process reads each one's run first) and times out."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:  # noqa: S310 - ours
            for line in answer.read().decode().splitlines():
                if line.startswith('suspensions_waiters{kind="wait"}'):
                    return int(float(line.split()[-1]))
    except TimeoutError:
        print("the /metrics scrape timed out; asking again", file=sys.stderr)
    return 0


async def held_when_all_parked(port: int, pid: int, waiters: int) -> int:
    """The server's RSS once every waiter has read its run and is parked (the server counts them)."""
    loop = asyncio.get_running_loop()
    while await loop.run_in_executor(None, waiting, port) < waiters:
        await asyncio.sleep(0.5)
    await asyncio.sleep(1)
    return rss_kib(pid)


def pause(run_id: str, reason: str = "external_tool") -> Any:
    """T2 on a registered run (revision 1), through the services; returns the pause."""
    from suspensions import services

    engine = common.principal("bench", ["engine"])
    return services.suspend_run(
        principal=engine,
        run_id=run_id,
        revision=1,
        reason=reason,
        pending=common.pending_call(),
        continuation=common.continuation(),
    )


def decide(suspension: Any) -> float:
    """An approver's approval of `suspension`, through the services; the time just after its commit."""
    from suspensions import services

    approver = common.principal("bench", ["approver"], name="approver")
    version = services.Version(
        run_id=suspension.run_id, suspension_id=suspension.id, run_revision=suspension.run.revision
    )
    services.approve(principal=approver, suspension_id=suspension.id, version=version)
    return time.monotonic()


def paused_now(run_id: str) -> float:
    pause(run_id)
    return time.monotonic()  # after the commit


async def measure(
    port: int, pid: int, token: str, runs: list[str], waiters: int, wakes: int, wake: Callable[[str], float]
) -> dict[str, float]:
    warm: dict[str, list[float]] = {}
    await asyncio.gather(*(wait_once(port, token, runs[i % len(runs)], 0, warm) for i in range(200)))
    await asyncio.sleep(1)
    idle = rss_kib(pid)
    print(f"warm: {sum(len(v) for v in warm.values())} answered; idle RSS {idle} KiB", file=sys.stderr)
    answered: dict[str, list[float]] = {}
    tasks = []
    for start in range(0, waiters, 500):
        tasks += [
            asyncio.create_task(wait_once(port, token, runs[i % len(runs)], 60, answered))
            for i in range(start, min(start + 500, waiters))
        ]
        await asyncio.sleep(0.05)
    held = await held_when_all_parked(port, pid, waiters)
    print(
        f"holding {waiters}: RSS {held} KiB; {sum(len(v) for v in answered.values())} answered early", file=sys.stderr
    )
    latencies: list[float] = []
    loop = asyncio.get_running_loop()
    for run_id in runs[:wakes]:
        committed = await loop.run_in_executor(None, wake, run_id)
        expected = sum(1 for i in range(waiters) if runs[i % len(runs)] == run_id)
        while len(answered.get(run_id, [])) < expected:
            await asyncio.sleep(0.001)
        latencies += [max(0.0, at - committed) for at in answered[run_id]]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "idle_rss_mib": idle / 1024,
        "held_rss_mib": held / 1024,
        "kib_per_waiter": (held - idle) / waiters,
        "wake_p50_ms": common.ms(common.percentile(latencies, 50)),
        "wake_p95_ms": common.ms(common.percentile(latencies, 95)),
        "woken": len(latencies),
    }


def main() -> None:
    parser = common.parser(__doc__.splitlines()[0])
    parser.add_argument("--waiters", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--wakes", type=int, default=50)
    parser.add_argument("--decide", action="store_true", help="pause for approval first; each wake is a decision")
    args = parser.parse_args()
    url = common.setup_django()
    common.reset_tables()
    runs = [str(r) for r in common.bulk_runs(args.runs, "bench")]
    wake: Callable[[str], float] = paused_now
    if args.decide:
        pauses = {run_id: pause(run_id, "approval") for run_id in runs[: args.wakes]}
        wake = lambda run_id: decide(pauses[run_id])  # noqa: E731
    token = common.make_token("bench", ["engine"], "waiters")
    process, port = start_uvicorn(url)
    try:
        result = asyncio.run(measure(port, process.pid, token, runs, args.waiters, args.wakes, wake))
    finally:
        process.terminate()  # uvicorn waits for its open connections: a moment, then no longer
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    result |= {"waiters": args.waiters, "runs": args.runs, "wake": "decision" if args.decide else "pause"}
    print(json.dumps(result, indent=2))
    print(
        f"{args.waiters} waiters in one uvicorn process: RSS {result['idle_rss_mib']:.0f} MiB idle, "
        f"{result['held_rss_mib']:.0f} MiB holding them ({result['kib_per_waiter']:.1f} KiB each); "
        f"a {result['wake']} reached its waiters in {result['wake_p50_ms']:.1f} ms p50, {result['wake_p95_ms']:.1f} ms p95 "
        f"({result['woken']} answers)"
    )


if __name__ == "__main__":
    main()
