"""Issue 31, item 6: the approval round trip against the peers a user would pick instead, side by side.

An agent pauses for a human approval, a human approves, the agent resumes:
the same work for every system, each persisting the pause durably in the
same machine's PostgreSQL and resuming once. Interleaved rounds (round k
runs every way at every client count once, in rotating order); the figures
are the median (min-max) of the rounds, the ratios taken inside each round.

- S-http: the service over HTTP (gunicorn, gthread, 2 workers x 16 threads,
  keep-alive clients): register with the first pause for approval, the pending
  call and the continuation, in one request (T1 + T2) -- the pause; then approve (T4) and start
  (T5, which hands the continuation back) -- the resume. Three requests.
- LG-in: LangGraph in-process, a one-node graph on `PostgresSaver` (a psycopg
  pool, the documented set-up: autocommit, prepare_threshold=0, dict rows).
  The pause is the first `invoke` (the thread starts, checkpoints the state
  with the same pending call and continuation, stops at `interrupt()`); the
  resume is `invoke(Command(resume=...))` (the node finishes, the graph ends).
- DBOS-in: DBOS Transact in-process, its system database a PostgreSQL database
  of its own that the bench creates and drops. The pause is
  `DBOS.start_workflow` (the workflow's row, with the pending call and the
  continuation as its inputs, is durable when it returns) until the approver
  reads the pending call with `DBOS.get_event`: the workflow publishes it with
  `DBOS.set_event` and then waits in `DBOS.recv` (whose durable timeout is a
  row too). The resume is the approver's `DBOS.send` of the decision, the
  workflow's `recv` consuming it, the workflow's result (the decision and the
  continuation) written, and `handle.get_result()` reading it. DBOS needs the
  event to tell the approver that the agent waits: LangGraph's `invoke`
  returns the interrupt, the service's suspend returns the suspension.
- S-in: the service's round trip in-process (no HTTP), and R1: raw psycopg
  replaying the service's own statements for it (captured as in
  bench/resume.py), the floor any framework on this schema meets.

    .venv/bin/python bench/versus_peers.py [--rounds 3] [--ops 200] [--clients 1,8] [--ways S-http,LG-in,DBOS-in,S-in,R1]
"""

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TypedDict

import common

SCOPE = "bench-peers"
SERVICE = "S-http"
PEERS = ("LG-in", "DBOS-in")
WAYS = ("S-http", "LG-in", "DBOS-in", "S-in", "R1")
METRIC = "round_trips_per_s"


class State(TypedDict, total=False):
    pending: list[dict[str, Any]]
    continuation: dict[str, Any]
    decision: Any


# -- LangGraph + PostgresSaver ---------------------------------------------------------


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
    return timed(clients, ops, lambda lat: lg_cycle(graph, lat))


# -- DBOS Transact ------------------------------------------------------------------------


def dbos_url(url: str) -> str:
    """DBOS's system database: the bench database's name with `_dbos` appended, on the same server."""
    info = common.conninfo(url)
    password = f":{info['password']}" if info["password"] else ""
    return f"postgresql://{info['user']}{password}@{info['host']}:{info['port']}/{info['dbname']}_dbos"


@contextmanager
def dbos_database(url: str) -> Iterator[str]:
    """A fresh system database for DBOS, dropped afterwards; only ever one whose name ends in `bench_dbos`."""
    name = common.conninfo(url)["dbname"]
    if not name.endswith("bench_dbos"):
        raise SystemExit(f"refusing to create or drop {name!r}: DBOS's bench database ends in 'bench_dbos'")
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with common.connect(admin, autocommit=True) as pg:
        pg.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # a crashed run's leftovers
        pg.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url
    finally:
        with common.connect(admin, autocommit=True) as pg:
            pg.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def dbos_workflow() -> Callable[..., Any]:
    """The agent as a DBOS workflow, registered once per process (DBOS's registry is global)."""
    from dbos import DBOS

    @DBOS.workflow(name="bench_peers_approval")
    def approval(pending: list[dict[str, Any]], continuation: dict[str, Any]) -> dict[str, Any]:
        DBOS.set_event("pending", pending)
        decision = DBOS.recv("approval", timeout_seconds=600)
        return {"decision": decision, "continuation": continuation}

    return approval


def launch_dbos(url: str, clients: int) -> None:
    """DBOS in this process on `url`: LISTEN/NOTIFY wakes `recv` and `get_event` (its default on PostgreSQL)."""
    from dbos import DBOS, DBOSConfig

    config: DBOSConfig = {
        "name": "bench-peers",
        "system_database_url": url,
        # Each client holds a connection at times and so does its workflow's thread; the listener one more.
        "sys_db_pool_size": 2 * clients + 4,
        "application_version": "bench",
        "run_admin_server": False,
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()


def dbos_cycle(workflow: Callable[..., Any], lat: list[float]) -> None:
    from dbos import DBOS

    t0 = time.perf_counter()
    handle = DBOS.start_workflow(workflow, common.pending_call(), common.continuation())
    pending = DBOS.get_event(handle.get_workflow_id(), "pending", timeout_seconds=60)
    t1 = time.perf_counter()
    assert pending == common.pending_call(), pending
    DBOS.send(handle.get_workflow_id(), {"decision": "approve", "note": ""}, topic="approval")
    done = handle.get_result()
    t2 = time.perf_counter()
    assert done["decision"]["decision"] == "approve" and done["continuation"], done
    lat += [t1 - t0, t2 - t1]


def dbos_phase(workflow: Callable[..., Any], clients: int, ops: int) -> dict[str, Any]:
    return timed(clients, ops, lambda lat: dbos_cycle(workflow, lat))


def vacuum_dbos(url: str) -> None:
    """What autovacuum would have done to DBOS's tables too (this machine's server runs without it)."""
    with common.connect(url, autocommit=True) as pg:
        if common.autovacuum_off(pg):
            pg.execute("VACUUM (ANALYZE)")  # the whole database: DBOS's alone


# -- the service, and R1 --------------------------------------------------------------------


def service_cycle(who: Any, lat: list[float]) -> None:
    from suspensions import services

    t0 = time.perf_counter()
    paused = services.register_and_pause(
        principal=who,
        agent_id="bench-agent",
        scope=SCOPE,
        pause={"reason": "approval", "pending": common.pending_call(), "continuation": common.continuation()},
    )
    suspension = paused.suspension
    run = suspension.run
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
    pause = {"reason": "approval", "pending": common.pending_call(), "continuation": common.continuation()}
    status, body = client.call("POST", "/api/v1/runs", {"agent_id": "bench-agent", "scope": SCOPE, "suspend": pause})
    t1 = time.perf_counter()
    assert status == 201, body[:300]
    s = json.loads(body)["suspension"]
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

    return run_and_close(conns, clients, work, per * clients)


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

    return run_and_close(conns, clients, work, per * clients)


def timed(clients: int, ops: int, cycle: Callable[[list[float]], None]) -> dict[str, Any]:
    """`ops` round trips of `cycle` spread over `clients` threads released together."""
    per = max(1, ops // clients)

    def work(i: int) -> list[float]:
        lat: list[float] = []
        for _ in range(per):
            cycle(lat)
        return lat

    wall, lat = common.run_threads(clients, work)
    return summarise(wall, lat, per * clients)


def run_and_close(conns: list[Any], clients: int, work: Any, total: int) -> dict[str, Any]:
    """`work` on `clients` threads, the connections closed whatever happens, summarised over `total` round trips."""
    try:
        wall, lat = common.run_threads(clients, work)
    finally:
        for c in conns:
            c.close()
    return summarise(wall, lat, total)


def summarise(wall: float, lat: list[float], ops: int) -> dict[str, Any]:
    return {
        METRIC: round(ops / wall, 1),
        "pause_p50_ms": common.ms(common.percentile(lat[0::2], 50)),
        "resume_p50_ms": common.ms(common.percentile(lat[1::2], 50)),
        "resume_p99_ms": common.ms(common.percentile(lat[1::2], 99)),
    }


# -- the arithmetic of the figures ----------------------------------------------------------


def ratios_of_round(
    rates: dict[str, float], service: str = SERVICE, peers: tuple[str, ...] = PEERS
) -> dict[str, float]:
    """The service's rate over each peer's in one round (`rates`: way -> round trips/s).

    None where the service or the peer did not run (`--ways`), or the peer made nothing.
    """
    if service not in rates:
        return {}
    return {f"{service} / {peer}": rates[service] / rates[peer] for peer in peers if rates.get(peer)}


def rate_spread(values: list[float]) -> str:
    """Rates of the rounds as "median (min-max)", one decimal (round trips a second)."""
    return f"{common.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def rounds_of(phases: dict[str, list[dict[str, Any]]], clients: int, ways: list[str]) -> list[dict[str, float]]:
    """Per round, each way's rate at `clients` (way -> round trips/s)."""
    present = [w for w in ways if f"{w}@{clients}" in phases]
    count = min(len(phases[f"{w}@{clients}"]) for w in present)
    return [{w: phases[f"{w}@{clients}"][k][METRIC] for w in present} for k in range(count)]


def round_rows(rounds: list[dict[str, float]], ways: list[str]) -> list[list[Any]]:
    """One row per round: each way's rate, then the service over each peer (two decimals; "-" where absent)."""
    rows = []
    for number, rates in enumerate(rounds, 1):
        ratios = ratios_of_round(rates)
        cells = [rates.get(w, "-") for w in ways]
        rows.append([number, *cells, *(f"{ratios[k]:.2f}" if k in ratios else "-" for k in ratio_names())])
    return rows


def ratio_names() -> list[str]:
    return [f"{SERVICE} / {peer}" for peer in PEERS]


def peer_ratios(phases: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Every way other than the peers over each peer, round by round: "median (min-max)"; then the service's pause
    p50 over LangGraph's at each client count (issue 53's target at 1 client: at most 1.2)."""
    out: dict[str, str] = {}
    for peer in PEERS:
        ratios = common.round_ratios(phases, peer, METRIC)
        out.update({k: v for k, v in ratios.items() if k.split("@")[0] not in PEERS})
    for key, ours in phases.items():
        way, clients = key.split("@")
        theirs = phases.get(f"LG-in@{clients}")
        if way == SERVICE and theirs and all("pause_p50_ms" in r for r in ours + theirs):
            values = [
                o["pause_p50_ms"] / t["pause_p50_ms"] for o, t in zip(ours, theirs, strict=False) if t["pause_p50_ms"]
            ]
            out[f"pause p50, {key} / LG-in@{clients} (lower is faster)"] = common.spread(values)
    return out


# -- wire counts ----------------------------------------------------------------------------


def count_pass(url: str, n: int, workflow: Callable[..., Any] | None) -> dict[str, Any]:
    """Wire counts per round trip of the in-process ways, through the counting proxy (never timed)."""
    info = common.conninfo(url)
    proxy = common.CountingProxy(info["host"], info["port"])
    out: dict[str, Any] = {}
    try:
        pool = lg_pool(url, 1, proxy.port)
        graph = build_graph(pool)
        out["LG-in"] = counted(proxy, n, lambda: lg_cycle(graph, []))
        pool.close()
        who = common.principal(SCOPE, ["engine", "approver"])
        with common.django_through(proxy.port):
            out["S-in"] = counted(proxy, n, lambda: service_cycle(who, []))
        if workflow is not None:
            out["DBOS-in"] = dbos_counts(url, proxy, n, workflow)
    finally:
        proxy.close()
    return out


def counted(proxy: common.CountingProxy, n: int, cycle: Callable[[], None]) -> dict[str, float]:
    before = proxy.snapshot()
    for _ in range(n):
        cycle()
    return common.per_op(before, proxy.snapshot(), n)


def dbos_counts(url: str, proxy: common.CountingProxy, n: int, workflow: Callable[..., Any]) -> dict[str, float]:
    """DBOS relaunched on its system database through the proxy (one client), counted, then shut down."""
    from dbos import DBOS

    DBOS.destroy()
    launch_dbos(dbos_url(common.with_port(url, proxy.port)), 1)
    try:
        return counted(proxy, n, lambda: dbos_cycle(workflow, []))
    finally:
        DBOS.destroy()


# -- the run --------------------------------------------------------------------------------


class Systems:
    """What the phases run on: LangGraph's graph, DBOS's workflow, the service's gunicorn and token, R1's replay."""

    def __init__(self, url: str, clients: int, ways: list[str]) -> None:
        self.url, self.ways = url, ways
        self.pool = lg_pool(url, clients)
        self.graph = build_graph(self.pool)
        with common.connection_cursor() as cursor:
            cursor.execute("TRUNCATE checkpoints, checkpoint_blobs, checkpoint_writes")
        self.workflow = dbos_workflow() if "DBOS-in" in ways else None
        self.replay = capture_cycle() if "R1" in ways else None
        self.secret = common.make_token(SCOPE, ["engine", "approver"], "bench-peers")
        self.server: common.Gunicorn | None = None

    def phase(self, way: str, clients: int, ops: int) -> dict[str, Any]:
        if way == "LG-in":
            return lg_phase(self.graph, clients, ops)
        if way == "DBOS-in":
            assert self.workflow is not None
            return dbos_phase(self.workflow, clients, ops)
        if way == "S-in":
            return s_in_phase(clients, ops)
        if way == "R1":
            return r1_phase(self.replay, clients, ops)
        assert self.server is not None
        return s_http_phase(self.server, self.secret, clients, ops)


def run_rounds(systems: Systems, rounds: int, levels: list[int], ops: int) -> dict[str, list[dict[str, Any]]]:
    """Round k runs every way at every client count once, the order rotated by k."""
    phases: dict[str, list[dict[str, Any]]] = {}
    plan = [(way, c) for c in levels for way in systems.ways]
    for round_no in range(rounds):
        common.between_rounds(systems.url, round_no + 1, ("suspensions_%", "checkpoint%"))  # LangGraph's tables too
        if systems.workflow is not None:
            vacuum_dbos(dbos_url(systems.url))
        order = plan[round_no % len(plan) :] + plan[: round_no % len(plan)]
        for way, clients in order:
            result = systems.phase(way, clients, ops)
            phases.setdefault(f"{way}@{clients}", []).append(result)
            print(f"round {round_no + 1} {way}@{clients}: {result}", flush=True)
        for clients in levels:
            rates = {w: phases[f"{w}@{clients}"][-1][METRIC] for w in systems.ways}
            ratios = ", ".join(f"{k} {v:.2f}" for k, v in ratios_of_round(rates).items())
            print(f"round {round_no + 1} @{clients}: {rates}; {ratios}", flush=True)
    return phases


def markdown(data: dict[str, Any], ways: list[str], levels: list[int]) -> str:
    args, phases = data["args"], data["rounds"]
    head = (
        f"### Against peers: LangGraph {data['versions']['langgraph']} + PostgresSaver, DBOS Transact "
        f"{data['versions']['dbos']} ({args['rounds']} rounds, median (min-max); {args['ops']} round trips per phase)"
    )
    rows = [
        [k, rate_spread([r[METRIC] for r in runs]), *list(data["figures"][k].values())[1:]]
        for k, runs in phases.items()
    ]
    parts = [
        head,
        "",
        common.table(["way@clients", "round trips/s", "pause p50 ms", "resume p50 ms", "resume p99 ms"], rows),
        "",
        common.table(["ratio (per round)", "median (min-max)"], [[k, v] for k, v in data["ratios"].items()]),
    ]
    for clients in levels:
        parts += ["", f"Round by round at {clients} client(s), round trips/s:", ""]
        parts.append(common.table(["round", *ways, *ratio_names()], round_rows(rounds_of(phases, clients, ways), ways)))
    parts += ["", f"Wire counts per round trip ({args['count_ops']} round trips through the counting proxy):", ""]
    counts = [
        [w, c["statements"], c["commits"], c["begins"], c["round_trips"], c["checks"]]
        for w, c in data["counts"].items()
    ]
    parts.append(common.table(["way", "statements", "commits", "begins", "round trips (wire)", "pool checks"], counts))
    return "\n".join(parts)


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {
        "langgraph": version("langgraph"),
        "langgraph-checkpoint-postgres": version("langgraph-checkpoint-postgres"),
        "dbos": version("dbos"),
    }


def main() -> dict[str, Any]:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=200, help="round trips per phase")
    p.add_argument("--clients", default="1,8")
    p.add_argument("--ways", default=",".join(WAYS), help="of " + ",".join(WAYS))
    p.add_argument("--count-ops", type=int, default=50)
    p.add_argument("--workers", type=int, default=2, help="S-http's gunicorn workers")
    p.add_argument("--threads", type=int, default=16, help="threads per worker")
    args = p.parse_args()
    ways = [w for w in WAYS if w in args.ways.split(",")]
    levels = [int(c) for c in args.clients.split(",")]
    url = common.setup_django()
    common.reset_tables()
    with dbos_database(dbos_url(url)) as system_db:
        systems = Systems(url, max(levels), ways)
        try:
            if systems.workflow is not None:
                launch_dbos(system_db, max(levels))
            serving = "S-http" in ways
            server = common.Gunicorn(url, workers=args.workers, threads=args.threads) if serving else nullcontext()
            with server as systems.server:
                phases = run_rounds(systems, args.rounds, levels, args.ops)
            counts = count_pass(url, args.count_ops, systems.workflow)
        finally:
            shut_down(systems)
    figures = {key: {k: round(common.median([r[k] for r in runs]), 3) for k in runs[0]} for key, runs in phases.items()}
    data = {
        "machine": common.machine(),
        "versions": versions(),
        "args": vars(args),
        "figures": figures,
        "rounds": phases,
        "ratios": peer_ratios(phases),
        "counts": counts,
    }
    common.write_result("versus_peers", data, markdown(data, ways, levels))
    return data


def shut_down(systems: Systems) -> None:
    from dbos import DBOS

    systems.pool.close()
    DBOS.destroy()  # nothing when DBOS is not running; its connections go before its database is dropped


if __name__ == "__main__":
    main()
