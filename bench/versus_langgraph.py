"""Issue 8.2: the service against what a user would pick instead, LangGraph with its PostgreSQL checkpointer.

Same run, same PostgreSQL database, interleaved rounds, median:

- LG-in: a one-node graph that pauses at `interrupt()` for an approval and is
  resumed with `Command(resume=...)`; a round trip is the first `invoke`
  (the thread starts and stops at the interrupt) plus the resuming `invoke`
  (the node finishes, the graph ends). Checkpointer: `PostgresSaver` on a
  psycopg pool (the documented set-up: autocommit, prepare_threshold=0, dict rows).
- R1: raw psycopg replaying the service's own statements for that round trip
  (captured as in bench/resume.py): the floor any framework on this schema meets.
- S-in / S-http: the same pause and resume through the service, in-process and
  over HTTP: register (T1), suspend for approval (T2), approve (T4), start (T5,
  which hands the continuation back). The graph state carries the same
  continuation and pending call, so both persist the same payload.

    .venv/bin/python bench/versus_langgraph.py [--rounds 3] [--ops 200] [--clients 1,8]
"""

import time
import uuid
from typing import Any, TypedDict

import common

SCOPE = "bench-lg"


class State(TypedDict, total=False):
    pending: list[dict[str, Any]]
    continuation: dict[str, Any]
    decision: Any


def build_graph(pool: Any) -> Any:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def ask(state: State) -> State:
        decision = interrupt({"pending": state["pending"]})
        return {"decision": decision}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    saver = PostgresSaver(pool)
    saver.setup()
    return builder.compile(checkpointer=saver)


def lg_pool(url: str, size: int, port: int | None = None) -> Any:
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    info = common.conninfo(url)
    if port is not None:
        info["port"] = port
    conninfo = " ".join(f"{k}={v}" for k, v in info.items() if v is not None)
    return ConnectionPool(
        conninfo,
        min_size=size,
        max_size=size,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )


def lg_cycle(graph: Any, lat: list[float]) -> None:
    from langgraph.types import Command

    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    t0 = time.perf_counter()
    paused = graph.invoke({"pending": common.pending_call(), "continuation": common.continuation()}, config)
    t1 = time.perf_counter()
    assert "__interrupt__" in paused
    done = graph.invoke(Command(resume={"decision": "approve", "note": ""}), config)
    t2 = time.perf_counter()
    assert done["decision"]["decision"] == "approve"
    lat += [t1 - t0, t2 - t1]


def lg_phase(graph: Any, clients: int, ops: int) -> dict[str, Any]:
    per = max(1, ops // clients)

    def work(i: int) -> list[float]:
        lat: list[float] = []
        for _ in range(per):
            lg_cycle(graph, lat)
        return lat

    wall, lat = common.run_threads(clients, work)
    return summarise(wall, lat, per * clients)


def service_cycle(who: Any, lat: list[float]) -> None:
    from suspensions import services

    t0 = time.perf_counter()
    run = services.register_run(principal=who, agent_id="bench-agent", scope=SCOPE)
    suspension = services.suspend_run(
        principal=who,
        run_id=run.id,
        revision=run.revision,
        reason="approval",
        pending=common.pending_call(),
        continuation=common.continuation(),
    )
    t1 = time.perf_counter()
    version = services.Version(run_id=run.id, suspension_id=suspension.id, run_revision=suspension.run.revision)
    claimed = services.approve(principal=who, suspension_id=suspension.id, version=version)
    started = services.start_admission(principal=who, admission_id=claimed.admission.id)
    t2 = time.perf_counter()
    assert started.suspension is not None
    lat += [t1 - t0, t2 - t1]


def s_in_phase(clients: int, ops: int) -> dict[str, Any]:
    from django.db import connection

    who = common.principal(SCOPE, ["engine", "approver"])
    per = max(1, ops // clients)

    def work(i: int) -> list[float]:
        lat: list[float] = []
        try:
            for _ in range(per):
                service_cycle(who, lat)
        finally:
            if clients > 1:
                connection.close()
        return lat

    wall, lat = common.run_threads(clients, work)
    return summarise(wall, lat, per * clients)


def http_cycle(client: common.Client, lat: list[float]) -> None:
    import json

    t0 = time.perf_counter()
    status, body = client.call("POST", "/api/v1/runs", {"agent_id": "bench-agent", "scope": SCOPE})
    assert status == 201, body[:300]
    run = json.loads(body)
    status, body = client.call(
        "POST",
        f"/api/v1/runs/{run['id']}/suspend",
        {
            "revision": run["revision"],
            "reason": "approval",
            "pending": common.pending_call(),
            "continuation": common.continuation(),
        },
    )
    t1 = time.perf_counter()
    assert status == 201, body[:300]
    s = json.loads(body)
    version = {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"]}
    status, body = client.call(
        "POST", f"/api/v1/approvals/{s['id']}/decide", {"version": version, "decision": "approve"}
    )
    assert status == 201, body[:300]
    admission_id = json.loads(body)["admission"]["id"]
    status, body = client.call("POST", f"/api/v1/admissions/{admission_id}/start")
    t2 = time.perf_counter()
    assert status == 201, body[:300]
    lat += [t1 - t0, t2 - t1]


def s_http_phase(server: common.Gunicorn, secret: str, clients: int, ops: int) -> dict[str, Any]:
    per = max(1, ops // clients)
    conns = server.clients(secret, clients)

    def work(i: int) -> list[float]:
        lat: list[float] = []
        for _ in range(per):
            http_cycle(conns[i], lat)
        return lat

    try:
        wall, lat = common.run_threads(clients, work)
    finally:
        for c in conns:
            c.close()
    return summarise(wall, lat, per * clients)


def capture_cycle() -> Any:
    """The statements of the service's round trip (register, suspend, approve, start), for R1."""
    from resume import Replay, capture

    from suspensions import services

    who = common.principal(SCOPE, ["engine", "approver"])
    register, run = capture(lambda: services.register_run(principal=who, agent_id="bench-agent", scope=SCOPE))
    suspend, suspension = capture(
        lambda: services.suspend_run(
            principal=who,
            run_id=run.id,
            revision=1,
            reason="approval",
            pending=common.pending_call(),
            continuation=common.continuation(),
        )
    )
    version = services.Version(run_id=run.id, suspension_id=suspension.id, run_revision=2)
    approve, claimed = capture(lambda: services.approve(principal=who, suspension_id=suspension.id, version=version))
    start, started = capture(lambda: services.start_admission(principal=who, admission_id=claimed.admission.id))
    from suspensions.models import ApprovalVote

    vote = ApprovalVote.objects.get(suspension_id=suspension.id)  # the approve is a vote: its row has an id too
    old = {
        "run": run.id,
        "suspension": suspension.id,
        "admission": claimed.admission.id,
        "start": started.start.id,
        "vote": vote.id,
    }
    return Replay({"register": register, "suspend": suspend, "approve": approve, "start": start}, old)


def r1_phase(replay: Any, clients: int, ops: int) -> dict[str, Any]:
    from resume import raw_connection

    per = max(1, ops // clients)
    conns = [raw_connection() for _ in range(clients)]

    def work(i: int) -> list[float]:
        lat: list[float] = []
        for _ in range(per):
            mapping = replay.ids_for()
            t0 = time.perf_counter()
            replay.call(conns[i], "register", mapping)
            replay.call(conns[i], "suspend", mapping)
            t1 = time.perf_counter()
            replay.call(conns[i], "approve", mapping)
            replay.call(conns[i], "start", mapping)
            lat += [t1 - t0, time.perf_counter() - t1]
        return lat

    try:
        wall, lat = common.run_threads(clients, work)
    finally:
        for c in conns:
            c.close()
    return summarise(wall, lat, per * clients)


def summarise(wall: float, lat: list[float], ops: int) -> dict[str, Any]:
    return {
        "round_trips_per_s": round(ops / wall, 1),
        "pause_p50_ms": common.ms(common.percentile(lat[0::2], 50)),
        "resume_p50_ms": common.ms(common.percentile(lat[1::2], 50)),
        "resume_p99_ms": common.ms(common.percentile(lat[1::2], 99)),
    }


def count_pass(url: str, n: int) -> dict[str, Any]:
    """Wire counts per round trip: LangGraph's checkpointer against the service in-process."""
    info = common.conninfo(url)
    proxy = common.CountingProxy(info["host"], info["port"])
    out: dict[str, Any] = {}
    try:
        pool = lg_pool(url, 1, proxy.port)
        graph = build_graph(pool)
        before = proxy.snapshot()
        for _ in range(n):
            lg_cycle(graph, [])
        out["LG-in"] = common.per_op(before, proxy.snapshot(), n)
        pool.close()
        who = common.principal(SCOPE, ["engine", "approver"])
        with common.django_through(proxy.port):
            before = proxy.snapshot()
            for _ in range(n):
                service_cycle(who, [])
            out["S-in"] = common.per_op(before, proxy.snapshot(), n)
    finally:
        proxy.close()
    return out


def main() -> dict[str, Any]:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=200, help="round trips per phase")
    p.add_argument("--clients", default="1,8")
    p.add_argument("--count-ops", type=int, default=50)
    args = p.parse_args()
    url = common.setup_django()
    common.reset_tables()
    levels = [int(c) for c in args.clients.split(",")]
    secret = common.make_token(SCOPE, ["engine", "approver"], "bench-lg")
    pool = lg_pool(url, max(levels))
    graph = build_graph(pool)
    with common.connection_cursor() as cursor:
        cursor.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")
    phases: dict[str, list[dict[str, Any]]] = {}
    replay = capture_cycle()
    plan = [(way, c) for c in levels for way in ("LG-in", "S-in", "S-http", "R1")]
    with common.Gunicorn(url, workers=2, threads=16) as server:
        for round_no in range(args.rounds):
            common.between_rounds(url, round_no + 1, ("suspensions_%", "checkpoint%"))  # LangGraph's tables too
            order = plan[round_no % len(plan) :] + plan[: round_no % len(plan)]
            for way, clients in order:
                if way == "LG-in":
                    result = lg_phase(graph, clients, args.ops)
                elif way == "S-in":
                    result = s_in_phase(clients, args.ops)
                elif way == "R1":
                    result = r1_phase(replay, clients, args.ops)
                else:
                    result = s_http_phase(server, secret, clients, args.ops)
                phases.setdefault(f"{way}@{clients}", []).append(result)
                print(f"round {round_no + 1} {way}@{clients}: {result}", flush=True)
    pool.close()
    figures = {key: {k: round(common.median([r[k] for r in runs]), 3) for k in runs[0]} for key, runs in phases.items()}
    ratios = common.round_ratios(phases, "LG-in", "round_trips_per_s")
    import langgraph.version

    data = {
        "machine": common.machine(),
        "langgraph": langgraph.version.__version__,
        "args": vars(args),
        "figures": figures,
        "rounds": phases,
        "ratios": ratios,
        "counts": count_pass(url, args.count_ops),
    }
    rows = [[k, *v.values()] for k, v in figures.items()]
    md = "\n".join(
        [
            f"### Against LangGraph {data['langgraph']} + PostgresSaver ({args.rounds} rounds, median; {args.ops} round trips per phase)",
            "",
            common.table(["way@clients", "round trips/s", "pause p50 ms", "resume p50 ms", "resume p99 ms"], rows),
            "",
            common.table(["ratio (per round)", "median (min-max)"], [[k, v] for k, v in ratios.items()]),
            "",
            f"Wire counts per round trip ({args.count_ops} round trips through the counting proxy):",
            "",
            common.table(
                ["way", "statements", "commits", "begins", "round trips (wire)", "pool checks"],
                [
                    [w, c["statements"], c["commits"], c["begins"], c["round_trips"], c["checks"]]
                    for w, c in data["counts"].items()
                ],
            ),
        ]
    )
    common.write_result("versus_langgraph", data, md)
    return data


if __name__ == "__main__":
    main()
