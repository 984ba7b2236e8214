"""Issue 35: what an `Idempotency-Key` costs a register, and what its replay costs, beside a plain register.

One gunicorn, keep-alive connections in threads. Each round runs three
phases of N `POST /api/v1/runs`, in an order that rotates per round:

- plain: no header (must cost what it did before the feature: no statement more);
- keyed: a new key per request (the key is taken, the run registered, the answer kept);
- replay: the keyed phase's requests again, same keys and bodies (the first answer, nothing registered).

Per phase: the gunicorn workers' CPU per request (/proc), PostgreSQL's CPU
per request (every postgres process on this machine), requests per second
and the median latency seen by the client; keyed and replay are also taken
as a ratio to plain inside each round. In-process, the statements each kind
sends (Django's test client, CaptureQueriesContext), the number that does
not move with the load.

    .venv/bin/python bench/idempotency.py [--rounds 5] [--requests 400] [--clients 8]
"""

import json
import time
import uuid
from typing import Any

import common

SCOPE = "bench-idem"
KINDS = ["plain", "keyed", "replay"]
BODY = {"agent_id": "bench-agent", "scope": SCOPE}


def register(client: common.Client, key: str | None) -> tuple[int, bytes]:
    """One register on `client`'s connection, with `key` as its Idempotency-Key (None: no header)."""
    headers = {**client.headers, **({"Idempotency-Key": key} if key else {})}
    client.conn.request("POST", "/api/v1/runs", body=json.dumps(BODY).encode(), headers=headers)
    response = client.conn.getresponse()
    return response.status, response.read()


def phase(server: common.Gunicorn, conns: list[common.Client], kind: str, keys: list[str]) -> dict[str, Any]:
    chunks = common.split(keys, len(conns))

    def send(c: int) -> list[float]:
        latencies = []
        for key in chunks[c]:
            t0 = time.perf_counter()
            status, body = register(conns[c], None if kind == "plain" else key)
            latencies.append(time.perf_counter() - t0)
            assert status == 201, body[:300]
        return latencies

    before, pg_before = server.cpu_seconds(), common.postgres_cpu()
    wall, latencies = common.run_threads(len(conns), send)
    cpu, pg = server.cpu_seconds() - before, common.postgres_cpu_since(pg_before)
    n = len(keys)
    return {
        "requests": n,
        "cpu_ms_per_request": round(cpu / n * 1000, 3),
        "pg_cpu_ms_per_request": round(pg / n * 1000, 3),
        "per_s": round(n / wall, 1),
        "p50_ms": round(common.percentile(latencies, 50) * 1000, 2),
    }


def statements() -> dict[str, int]:
    """Statements one register sends, in-process: plain, keyed (a new key), replay (that key again)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_AUTHORIZATION=f"Bearer {common.make_token(SCOPE, ['engine'], 'bench-idem-statements')}")
    key = str(uuid.uuid4())
    out = {}
    keyed = {"HTTP_IDEMPOTENCY_KEY": key}
    for kind, headers in (("warm", {}), ("plain", {}), ("keyed", keyed), ("replay", keyed)):
        with CaptureQueriesContext(connection) as queries:
            response = client.post("/api/v1/runs", json.dumps(BODY), content_type="application/json", **headers)
        assert response.status_code == 201, response.content[:300]
        out[kind] = len(queries.captured_queries)
    del out["warm"]  # the token's first use writes its last_used_at
    return out


def main() -> dict[str, Any]:
    args = common.gunicorn_parser(__doc__.splitlines()[0], threads=8).parse_args()
    url = common.setup_django()
    common.reset_tables()
    secret = common.make_token(SCOPE, ["engine"], "bench-idem")
    phases: dict[str, list[dict[str, Any]]] = {}
    with common.Gunicorn(url, workers=args.workers, threads=args.threads) as server:
        conns = server.clients(secret, args.clients)
        warm = [str(uuid.uuid4()) for _ in range(args.requests // 4)]
        for kind in KINDS:
            phase(server, conns, kind, warm)
        for round_no in range(args.rounds):
            common.between_rounds(url, round_no + 1)
            keys = [str(uuid.uuid4()) for _ in range(args.requests)]
            order = KINDS[round_no % 2 :] + KINDS[: round_no % 2]  # plain first, or keyed first
            order.remove("replay")
            order.insert(order.index("keyed") + 1, "replay")  # a replay needs its keyed phase
            for kind in order:
                result = phase(server, conns, kind, keys)
                phases.setdefault(kind, []).append(result)
                print(f"round {round_no + 1} {kind}: {result}", flush=True)
        for c in conns:
            c.close()
    data = {"machine": common.machine(), "args": vars(args), "rounds": phases, "statements": statements()}
    common.write_result("idempotency", data, markdown(data))
    return data


def markdown(data: dict[str, Any]) -> str:
    a, phases = data["args"], data["rounds"]
    rows = []
    for kind in KINDS:
        runs = phases[kind]
        ratio = (
            "1.00"
            if kind == "plain"
            else common.spread(
                [r["cpu_ms_per_request"] / b["cpu_ms_per_request"] for r, b in zip(runs, phases["plain"], strict=True)]
            )
        )
        rows.append(
            [
                kind,
                common.spread([r["cpu_ms_per_request"] for r in runs]),
                ratio,
                common.spread([r["pg_cpu_ms_per_request"] for r in runs]),
                common.spread([r["per_s"] for r in runs]),
                common.spread([r["p50_ms"] for r in runs]),
                data["statements"][kind],
            ]
        )
    head = (
        f"### Register with and without an Idempotency-Key ({a['rounds']} rounds, median (min-max); "
        f"{a['requests']} requests per phase, {a['clients']} clients, {a['workers']} workers x {a['threads']} threads)"
    )
    headers = [
        "kind",
        "gunicorn CPU ms/request",
        "CPU / plain (per round)",
        "PostgreSQL CPU ms/request",
        "requests/s",
        "p50 ms",
        "statements/request",
    ]
    return head + "\n\n" + common.table(headers, rows)


if __name__ == "__main__":
    main()
