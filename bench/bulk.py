"""Issue 54: 100 approvals decided in one `POST /api/v1/approvals/decide`, beside 100 single decides over HTTP.

One gunicorn, one approver on one keep-alive connection (an approver's
inbox sends one request at a time). Each round pauses 200 runs for approval
(set-up, not timed), then runs two phases in an order that alternates per
round:

- list: the first 100 approvals approved in one request of 100 items;
- singles: the other 100 approved with 100 `POST /approvals/{id}/decide`, one after another.

Per phase: the wall time of the 100 decisions seen by the client, its
share per decision, and the gunicorn workers' CPU per decision (/proc).
Every decision must answer 201.

    .venv/bin/python bench/bulk.py [--rounds 5] [--items 100]
"""

import json
import time
from typing import Any

import common

SCOPE = "bench-bulk"
KINDS = ["list", "singles"]


def paused(engine: common.Client, n: int) -> list[dict[str, Any]]:
    """`n` runs paused for approval through the API; each one's version."""
    out = []
    for _ in range(n):
        status, body = engine.call("POST", "/api/v1/runs", {"agent_id": "bench-agent", "scope": SCOPE})
        assert status == 201, body[:300]
        run = json.loads(body)
        pause = {
            "revision": run["revision"],
            "reason": "approval",
            "pending": common.pending_call(),
            "continuation": common.continuation(),
        }
        status, body = engine.call("POST", f"/api/v1/runs/{run['id']}/suspend", pause)
        assert status == 201, body[:300]
        s = json.loads(body)
        out.append({"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"]})
    return out


def as_list(approver: common.Client, versions: list[dict[str, Any]]) -> None:
    items = [{"approval_id": v["suspension_id"], "version": v, "decision": "approve"} for v in versions]
    status, body = approver.call("POST", "/api/v1/approvals/decide", {"items": items})
    assert status == 200, body[:300]
    assert [r["status"] for r in json.loads(body)["results"]] == [201] * len(versions), body[:500]


def one_by_one(approver: common.Client, versions: list[dict[str, Any]]) -> None:
    for v in versions:
        status, body = approver.call(
            "POST", f"/api/v1/approvals/{v['suspension_id']}/decide", {"version": v, "decision": "approve"}
        )
        assert status == 201, body[:300]


def phase(
    server: common.Gunicorn, approver: common.Client, kind: str, versions: list[dict[str, Any]]
) -> dict[str, Any]:
    before = server.cpu_seconds()
    t0 = time.perf_counter()
    (as_list if kind == "list" else one_by_one)(approver, versions)
    wall = time.perf_counter() - t0
    cpu = server.cpu_seconds() - before
    n = len(versions)
    return {
        "decisions": n,
        "wall_ms": round(wall * 1000, 1),
        "ms_per_decision": round(wall / n * 1000, 3),
        "cpu_ms_per_decision": round(cpu / n * 1000, 3),
    }


def main() -> dict[str, Any]:
    p = common.parser(__doc__.splitlines()[0])
    p.set_defaults(rounds=5)
    p.add_argument("--items", type=int, default=100, help="decisions per phase (the list takes at most 100)")
    args = p.parse_args()
    url = common.setup_django()
    common.reset_tables()
    engine_secret = common.make_token(SCOPE, ["engine"], "bench-bulk-engine")
    approver_secret = common.make_token(SCOPE, ["approver"], "bench-bulk-approver")
    phases: dict[str, list[dict[str, Any]]] = {}
    with common.Gunicorn(url, workers=2, threads=4) as server:
        engine, approver = server.clients(engine_secret, 1)[0], server.clients(approver_secret, 1)[0]
        warm = paused(engine, 20)
        as_list(approver, warm[:10])
        one_by_one(approver, warm[10:])
        for round_no in range(args.rounds):
            common.between_rounds(url, round_no + 1)
            versions = paused(engine, 2 * args.items)
            order = KINDS if round_no % 2 == 0 else KINDS[::-1]
            for i, kind in enumerate(order):
                result = phase(server, approver, kind, versions[i * args.items : (i + 1) * args.items])
                phases.setdefault(kind, []).append(result)
                print(f"round {round_no + 1} {kind}: {result}", flush=True)
        engine.close()
        approver.close()
    ratios = [
        s["wall_ms"] / b["wall_ms"] for s, b in zip(phases["singles"], phases["list"], strict=True) if b["wall_ms"]
    ]
    data = {"machine": common.machine(), "args": vars(args), "rounds": phases, "singles_over_list": ratios}
    common.write_result("bulk", data, markdown(data))
    return data


def markdown(data: dict[str, Any]) -> str:
    a, phases = data["args"], data["rounds"]
    rows = [
        [
            "one list of {n}" if kind == "list" else "{n} single decides",
            common.spread([r["wall_ms"] for r in phases[kind]]),
            common.spread([r["ms_per_decision"] for r in phases[kind]]),
            common.spread([r["cpu_ms_per_decision"] for r in phases[kind]]),
        ]
        for kind in KINDS
    ]
    for row in rows:
        row[0] = row[0].format(n=a["items"])
    head = (
        f"### {a['items']} approvals decided in one request, beside one request each ({a['rounds']} rounds, "
        f"median (min-max); one approver connection, 2 workers x 4 threads); singles / list wall time: "
        f"{common.spread(data['singles_over_list'])}"
    )
    return head + "\n\n" + common.table(["how", "wall ms", "ms per decision", "gunicorn CPU ms per decision"], rows)


if __name__ == "__main__":
    main()
