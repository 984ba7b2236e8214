"""Issue 15, slow clients: how long /healthz and the API take while 200 connections never finish their header.

The production shape, started for real (tests/front_door.py): gunicorn -c gunicorn.conf.py
(2 workers x 4 threads, DEBUG off) on the bench database, and nginx in front of it with
deploy/nginx/suspensions.conf. For each front door in turn, straight to gunicorn and through
nginx, each round:

1. /healthz alone, `--baseline` times: the latency without slow clients;
2. `--slow` connections send `GET /healthz HTTP/1.1` and a Host line, never the blank line that
   ends the header, and are held for `--hold` seconds (then closed by this script);
3. meanwhile two clients send GET /healthz and GET /api/v1/runs (with a token), each back to
   back, waiting as long as an answer takes: one that comes only after the release took the hold;
4. how many of the slow connections the server closed itself within the hold, and when.

    .venv/bin/python bench/slow_clients.py [--slow 200] [--hold 15] [--rounds 1]

Needs nginx (`make proxy`). Writes bench/results/latest/slow_clients.{json,md}.
"""

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import common

from tests.front_door import Server, SlowClients, request, start_gunicorn, start_nginx

PROBES = ("/healthz", "/api/v1/runs")


def probe_while_held(port: int, slow: int, hold: float, secret: str) -> dict[str, Any]:
    """Hold `slow` partial-header connections for `hold` seconds and probe `port` meanwhile."""
    auth = {"Authorization": f"Bearer {secret}"}
    answers: dict[str, list[dict[str, Any]]] = {path: [] for path in PROBES}
    closed: dict[int, float] = {}
    with SlowClients(port, slow) as clients:

        def watch() -> None:
            # Until the hold ends: which connections the server closes itself; then let them all go.
            closed.update(clients.closed_by_server(timeout=hold - (time.monotonic() - clients.opened)))
            clients.close()

        def probe(path: str) -> None:
            # Back to back until the hold ends; the one in flight then may wait for the release.
            while time.monotonic() - clients.opened < hold:
                sent = time.monotonic()
                answer = request(port, "GET", path, headers=auth, timeout=hold + 60)
                took = time.monotonic() - sent
                answers[path].append(
                    {
                        "status": answer.status,
                        "sent_at": round(sent - clients.opened, 3),
                        "seconds": round(took, 4),
                        "after_release": sent + took - clients.opened >= hold,
                    }
                )

        watcher = threading.Thread(target=watch)
        watcher.start()
        time.sleep(0.5)  # for the server to take them in: the probes queue behind them
        probes = [threading.Thread(target=probe, args=(path,)) for path in PROBES]
        for thread in probes:
            thread.start()
        for thread in [*probes, watcher]:
            thread.join()
    every = [a for path in PROBES for a in answers[path]]
    return {
        "answers": answers,
        "statuses": sorted({a["status"] for a in every}),
        "answered_during_hold": sum(not a["after_release"] for a in every),
        "healthz_first_seconds": answers["/healthz"][0]["seconds"],
        "api_first_seconds": answers["/api/v1/runs"][0]["seconds"],
        "median_seconds": common.median([a["seconds"] for a in every]),
        "max_seconds": max(a["seconds"] for a in every),
        "slow_closed_by_server": len(closed),
        "slow_closed_median_seconds": round(common.median(list(closed.values())), 2) if closed else None,
    }


def baseline(port: int, times: int) -> float:
    latencies = []
    for _ in range(times):
        sent = time.monotonic()
        assert request(port, "GET", "/healthz", timeout=10).status == 200
        latencies.append(time.monotonic() - sent)
    return common.median(latencies)


def main() -> None:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--slow", type=int, default=200, help="connections that never finish their header")
    p.add_argument("--hold", type=float, default=15.0, help="seconds they are held open")
    p.add_argument("--baseline", type=int, default=20, help="/healthz requests without slow clients")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=4)
    p.set_defaults(rounds=1)
    args = p.parse_args()

    url = common.setup_django()
    secret = common.make_token("bench-slow", ["engine"], "bench-slow-clients")
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="suspensions-slow-") as tmp:
        directory = Path(tmp)
        gunicorn: Server = start_gunicorn(directory, url, workers=args.workers, threads=args.threads)
        try:
            nginx = start_nginx(directory, gunicorn.port)
            try:
                for r in range(args.rounds):
                    for door, port in (("gunicorn", gunicorn.port), ("nginx -> gunicorn", nginx.port)):
                        alone = baseline(port, args.baseline)
                        held = probe_while_held(port, args.slow, args.hold, secret)
                        rounds.append({"round": r, "door": door, "alone_seconds": alone, **held})
                        print(
                            f"round {r} {door}: alone {common.ms(alone)} ms; with {args.slow} slow: first "
                            f"{held['healthz_first_seconds']} s, {held['answered_during_hold']} answered during the "
                            f"{args.hold} s hold, slow closed by server {held['slow_closed_by_server']}",
                            flush=True,
                        )
            finally:
                nginx.stop()
        finally:
            gunicorn.stop()

    rows = []
    for door in ("gunicorn", "nginx -> gunicorn"):
        mine = [r for r in rounds if r["door"] == door]

        def med(key: str, runs: list[dict[str, Any]] = mine) -> float:
            return common.median([r[key] for r in runs if r[key] is not None])

        closed = med("slow_closed_by_server")
        when = [r["slow_closed_median_seconds"] for r in mine if r["slow_closed_median_seconds"] is not None]
        rows.append(
            [
                door,
                f"{common.ms(med('alone_seconds'))} ms",
                f"{med('healthz_first_seconds'):.3f} s",
                f"{med('api_first_seconds'):.3f} s",
                f"{med('median_seconds'):.3f} s",
                f"{med('max_seconds'):.3f} s",
                int(med("answered_during_hold")),
                f"{int(closed)} of {args.slow}" + (f", after {common.median(when):.1f} s" if when else ""),
            ]
        )
    markdown = (
        f"{args.slow} connections hold a partial request header for {args.hold:g} s; gunicorn "
        f"{args.workers} workers x {args.threads} threads (gthread); medians of {args.rounds} round(s).\n\n"
        + common.table(
            [
                "front door",
                "/healthz alone",
                "first /healthz while held",
                "first /api/v1/runs while held",
                "median answer while held",
                "slowest answer",
                "answers during the hold",
                "slow connections the server closed itself",
            ],
            rows,
        )
    )
    common.write_result(
        "slow_clients",
        {"args": vars(args), "machine": common.machine(), "rounds": rounds},
        markdown,
    )


if __name__ == "__main__":
    main()
