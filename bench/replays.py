"""Issue 8.4: idempotent replays. The first call against the identical call again, over HTTP.

For one-shot resumes (engine) and approval decisions (approver): latency of
the first call and of two identical replays, and whether the receipts are
byte-identical: every replay body equals the other replay's byte for byte,
and the receipts in it equal the first call's (the `fresh` flag aside) once
serialised the same way.

    .venv/bin/python bench/replays.py [--rounds 3] [--ops 200]
"""

import json
import time
from typing import Any

import common

SCOPE = "bench-replay"
RESULTS = [{"call_id": "c1", "content": {"ok": True}}]


def receipts(body: dict[str, Any]) -> bytes:
    admission = {k: v for k, v in body["admission"].items() if k != "fresh"}
    return json.dumps([admission, body.get("start")], separators=(",", ":")).encode()


def pause(client: common.Client, reason: str) -> dict[str, Any]:
    status, body = client.call("POST", "/api/v1/runs", {"agent_id": "bench-agent", "scope": SCOPE})
    run = json.loads(body)
    status, body = client.call(
        "POST",
        f"/api/v1/runs/{run['id']}/suspend",
        {"revision": 1, "reason": reason, "pending": common.pending_call(), "continuation": common.continuation()},
    )
    assert status == 201, body[:300]
    return json.loads(body)


def one(client: common.Client, kind: str) -> tuple[list[float], bool, bool]:
    """One pause answered three times; returns (latencies, replays identical, receipts identical)."""
    s = pause(client, "external_tool" if kind == "resume" else "approval")
    version = {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"]}
    if kind == "resume":
        path, body = f"/api/v1/runs/{s['run_id']}/resume", {"version": version, "results": RESULTS}
    else:
        path, body = f"/api/v1/approvals/{s['id']}/decide", {"version": version, "decision": "approve"}
    answers, lat = [], []
    for expected in (201, 200, 200):
        t0 = time.perf_counter()
        status, raw = client.call("POST", path, body)
        lat.append(time.perf_counter() - t0)
        assert status == expected, raw[:300]
        answers.append(raw)
    first, replay = json.loads(answers[0]), json.loads(answers[1])
    return lat, answers[1] == answers[2], receipts(first) == receipts(replay) and replay["fresh"] is False


def phase(port: int, secret: str, kind: str, ops: int) -> dict[str, Any]:
    client = common.Client(port, secret)
    firsts, replays, identical, same_receipts = [], [], 0, 0
    try:
        for _ in range(ops):
            lat, same_body, same_receipt = one(client, kind)
            firsts.append(lat[0])
            replays += lat[1:]
            identical += same_body
            same_receipts += same_receipt
    finally:
        client.close()
    return {
        "first_p50_ms": common.ms(common.percentile(firsts, 50)),
        "first_p99_ms": common.ms(common.percentile(firsts, 99)),
        "replay_p50_ms": common.ms(common.percentile(replays, 50)),
        "replay_p99_ms": common.ms(common.percentile(replays, 99)),
        "replay_over_first_p50": round(common.percentile(replays, 50) / common.percentile(firsts, 50), 2),
        "replay_bodies_identical": f"{identical}/{ops}",
        "receipts_identical": f"{same_receipts}/{ops}",
    }


def main() -> dict[str, Any]:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=200, help="pauses per kind per round")
    args = p.parse_args()
    url = common.setup_django()
    common.reset_tables()
    secret = common.make_token(SCOPE, ["engine", "approver"], "bench-replay")
    runs: dict[str, list[dict[str, Any]]] = {}
    with common.Gunicorn(url, workers=1, threads=4) as server:
        for round_no in range(args.rounds):
            for kind in ("resume", "decide") if round_no % 2 == 0 else ("decide", "resume"):
                result = phase(server.port, secret, kind, args.ops)
                runs.setdefault(kind, []).append(result)
                print(f"round {round_no + 1} {kind}: {result}", flush=True)
    figures = {}
    for kind, rounds in runs.items():
        figures[kind] = {
            k: round(common.median([r[k] for r in rounds]), 3) for k in rounds[0] if k.endswith(("ms", "first_p50"))
        }
        figures[kind]["replay_bodies_identical"] = " + ".join(r["replay_bodies_identical"] for r in rounds)
        figures[kind]["receipts_identical"] = " + ".join(r["receipts_identical"] for r in rounds)
    data = {"machine": common.machine(), "args": vars(args), "figures": figures, "rounds": runs}
    md = "\n".join(
        [
            f"### Idempotent replays over HTTP ({args.rounds} rounds of {args.ops} pauses per kind, two replays each; median)",
            "",
            common.table(
                [
                    "call",
                    "first p50 ms",
                    "first p99 ms",
                    "replay p50 ms",
                    "replay p99 ms",
                    "replay/first p50",
                    "replay bodies identical",
                    "receipts identical",
                ],
                [
                    [
                        k,
                        f["first_p50_ms"],
                        f["first_p99_ms"],
                        f["replay_p50_ms"],
                        f["replay_p99_ms"],
                        f["replay_over_first_p50"],
                        f["replay_bodies_identical"],
                        f["receipts_identical"],
                    ]
                    for k, f in figures.items()
                ],
            ),
        ]
    )
    common.write_result("replays", data, md)
    return data


if __name__ == "__main__":
    main()
