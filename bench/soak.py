"""Issue 18: the soak. A mixed load over HTTP for `--minutes` (default 10) at the machine's capacity.

Real processes, nothing simulated: gunicorn (gthread) on a freshly emptied
bench database, push's Celery worker (`-Q celery,fanout,delivery`) and the
sweep's own worker with the beat (`-Q sweep --beat`, the sweep every
`--sweep-interval` seconds), as docs/deploy.md runs them, and a local webhook receiver in this process
(`push.Receiver`, counting deliveries by `webhook-id`) behind one endpoint
created through the API. `--clients` threads, each on one keep-alive
connection, run scenarios picked at random, each a whole run's life:

- one-shot: register, suspend (external_tool), resume (a tenth send the
  identical resume again: a replay), complete;
- approval: suspend for approval (quorum 1, or quorum 2 decided by two of
  three approvers, or denied, or answered in words); an approver reads the
  approval and decides; the engine reads `admissions/latest`, starts, completes;
- agent reply: suspend (agent_reply); the bus finds the pause by
  `reply_with`, admits the reply; the engine starts and completes;
- left to expire (deadline 2-4 s, the sweep answers): an unanswered tool
  pause, an approval whose policy denies at expiry, one that escalates first,
  and an admitted agent reply never started (an expiry receipt).

Every minute: throughput, p50 and p99 per call kind, 5xx and other
unexpected statuses, the gunicorn workers' and the Celery worker's RSS
(/proc), and PostgreSQL's connections to the bench database; beside them the
CPU each part used, the webhook backlog, the broker's queue, and how late
deliveries and expiries were (soak_watch.py). A server with autovacuum off
(this machine's) gets what autovacuum would do: the watch runs VACUUM
(ANALYZE) of the app's tables every `--vacuum-seconds` (60, autovacuum's
default wake-up; 0: never), so dead rows do not pile up as they never would
in production. `--autovacuum off` instead turns autovacuum off on each of
the app's tables (`autovacuum_enabled = false`) and runs no VACUUM at all:
the issue 50 (item 11) repeat, where nothing ever analyzes the tables. Every
second the watch reads the sweep's heartbeat and /readyz: the report gives
the largest gap between successful sweeps and the /readyz answers seen.
After the load drains (the
sweep expired what was due, every webhook delivered; up to `--drain-minutes`
each), the invariants are checked in the database (soak_checks.py). Writes
bench/results/latest/soak.{json,md}, docs/soak.svg and the "Soak" block of
docs/benchmarks.md. Not part of `make bench` (it takes `--minutes`):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/suspensions CELERY_BROKER_URL=redis://127.0.0.1:6379/14 \\
        .venv/bin/python bench/soak.py --minutes 10 [--clients 16] [--workers 2] [--threads 8] \\
        [--celery-concurrency 2] [--sweep-interval 5] [--drain-minutes 60] [--vacuum-seconds 60] [--autovacuum off]
"""

import http.client
import json
import os
import random
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import common
import push
import soak_chart
import soak_checks
import soak_report
import soak_watch

SCOPE = "bench-soak"
API = "/api/v1"
CONTINUATION = {
    "messages": [{"role": "user", "content": "refund order 42"}],
    "system_prompt": "You are the support agent.",
    "step_index": 3,
    "tokens_used": 900,
    "new_messages_from": 0,
    "session_id": "soak",
    "config": {"model": "m-1", "tools": ["refund", "query", "ask_peer"]},
}
SCENARIOS = [("one_shot", 4), ("approval", 3), ("agent_reply", 2), ("expire", 1)]
APPROVALS = [("approve", 4), ("quorum2", 3), ("deny", 2), ("respond", 1)]
EXPIRIES = ["tool", "deny_at_expiry", "escalate", "admitted_unstarted"]
FINISHED = ["registered", "suspended", "admitted", "started", "completed"]


class Unexpected(Exception):
    """A call answered a status the scenario did not expect: the scenario stops, its run is left out."""


class Book:
    """What the load did, shared by the threads: each call, each finished scenario, what each run should hold."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.t0, self.t0_wall = time.monotonic(), time.time()
        self.calls: list[tuple[float, str, float, int, bool]] = []  # (at, kind, seconds, status, expected)
        self.finished: list[tuple[float, str]] = []
        self.expected: dict[str, tuple[list[str], str]] = {}  # run id -> (event kinds, final state)
        self.abandoned: dict[str, str] = {}
        self.to_expire: set[str] = set()
        self.samples: list[dict[str, Any]] = []
        self.vacuums: list[dict[str, float]] = []

    def start(self) -> None:
        """The load begins: what set-up did is not counted."""
        self.calls.clear()
        self.t0, self.t0_wall = time.monotonic(), time.time()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def call(self, kind: str, seconds: float, status: int, ok: bool) -> None:
        self.calls.append((self.now(), kind, seconds, status, ok))  # list.append is atomic under the GIL

    def expect(self, run_id: str, kinds: list[str], state: str, scenario: str) -> None:
        with self.lock:
            self.expected[run_id] = (kinds, state)
        self.finished.append((self.now(), scenario))


class Driver:
    """One client thread: one keep-alive connection, a bearer token per call."""

    def __init__(self, port: int, tokens: dict[str, Any], book: Book, seed: int) -> None:
        self.port, self.tokens, self.book = port, tokens, book
        self.rng = random.Random(seed)
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(
        self, kind: str, who: str, method: str, path: str, body: Any = None, expect: tuple[int, ...] = (200,)
    ) -> tuple[int, Any]:
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {who}"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        started = time.perf_counter()
        try:
            self.conn.request(method, API + path, body=payload, headers=headers)
            response = self.conn.getresponse()
            status, data = response.status, response.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            status, data = 0, b""
        self.book.call(kind, time.perf_counter() - started, status, status in expect)
        if status not in expect:
            raise Unexpected(f"{kind} {method} {path}: {status} {data[:300]!r}")
        return status, json.loads(data) if data else None

    def pick(self, weighted: list[tuple[str, int]]) -> str:
        return self.rng.choices([n for n, _ in weighted], weights=[w for _, w in weighted])[0]

    # -- the engine's steps ------------------------------------------------------------------

    def register(self) -> str:
        _, run = self.call("register", self.tokens["engine"], "POST", "/runs", {"agent_id": "soak-agent"}, (201,))
        return str(run["id"])

    def suspend(self, run_id: str, reason: str, pending: list[Any], ttl: int, policy: Any = None) -> dict[str, Any]:
        body = {"revision": 1, "reason": reason, "pending": pending, "continuation": CONTINUATION, "ttl_seconds": ttl}
        if policy is not None:
            body["approval"] = policy
        _, pause = self.call("suspend", self.tokens["engine"], "POST", f"/runs/{run_id}/suspend", body, (201,))
        return {"run_id": run_id, "suspension_id": pause["id"], "run_revision": pause["run_revision"]}

    def start_and_complete(self, admission_id: str, run_id: str) -> None:
        engine = self.tokens["engine"]
        _, started = self.call("start", engine, "POST", f"/admissions/{admission_id}/start", None, (201,))
        self.call("complete", engine, "POST", f"/runs/{run_id}/complete", {"revision": started["run_revision"]})

    # -- scenarios: each returns (event kinds, final state) of its run --------------------------

    def one_shot(self, run_id: str) -> tuple[list[str], str]:
        call = {"id": "c1", "name": "query", "arguments": '{"sql": "select 1"}'}
        version = self.suspend(run_id, "external_tool", [call], 3600)
        body = {"version": version, "results": [{"call_id": "c1", "content": {"rows": self.rng.randint(0, 99)}}]}
        _, resumed = self.call("resume", self.tokens["engine"], "POST", f"/runs/{run_id}/resume", body, (201,))
        if self.rng.random() < 0.1:
            self.call("resume replay", self.tokens["engine"], "POST", f"/runs/{run_id}/resume", body, (200,))
        revision = resumed["run_revision"]
        self.call("complete", self.tokens["engine"], "POST", f"/runs/{run_id}/complete", {"revision": revision})
        return FINISHED, "completed"

    def approval(self, run_id: str) -> tuple[list[str], str]:
        how = self.pick(APPROVALS)
        policy = {"quorum": 2} if how == "quorum2" else None
        call = {"id": "c1", "name": "refund", "arguments": '{"amount": 900}'}
        pause = self.suspend(run_id, "approval", [call], 3600, policy)
        first, second = self.rng.sample(self.tokens["approvers"], 2)
        sid = pause["suspension_id"]
        if self.rng.random() < 0.1:
            self.call("inbox", first, "GET", "/approvals?page_size=20")
        _, approval = self.call("approval read", first, "GET", f"/approvals/{sid}")
        decide = f"/approvals/{sid}/decide"
        body: dict[str, Any] = {"version": approval["version"], "decision": "approve"}
        if how == "deny":
            self.call("decide", first, "POST", decide, {**body, "decision": "deny", "reason": "no"}, (201,))
            return ["registered", "suspended", "denied"], "failed"
        if how == "respond":
            body = {**body, "decision": "respond", "response": "Refund half now."}
        if how == "quorum2":
            self.call("decide", first, "POST", decide, body, (202,))
            self.call("decide", second, "POST", decide, body, (201,))
        else:
            self.call("decide", first, "POST", decide, body, (201,))
        _, latest = self.call("admissions latest", self.tokens["engine"], "GET", f"/runs/{run_id}/admissions/latest")
        self.start_and_complete(latest["id"], run_id)
        kinds = ["registered", "suspended", "voted", "voted", *FINISHED[2:]] if how == "quorum2" else FINISHED
        return kinds, "completed"

    def agent_reply(self, run_id: str, ttl: int = 3600, start: bool = True) -> tuple[list[str], str]:
        question = f"q-{uuid.UUID(int=self.rng.getrandbits(128)).hex[:16]}"
        call = {"id": "ask_1", "name": "ask_peer", "arguments": '{"question": "stock?"}', "reply_with": question}
        self.suspend(run_id, "agent_reply", [call], ttl)
        bus = self.tokens["bus"]
        _, found = self.call("find reply", bus, "GET", f"/suspensions?reply_with={question}")
        row = found["results"][0]
        version = {"run_id": run_id, "suspension_id": row["id"], "run_revision": row["run_revision"]}
        body = {"version": version, "input": json.dumps({"answer": self.rng.randint(0, 99)}), "reply_with": question}
        status, admitted = self.call("admit", bus, "POST", f"/runs/{run_id}/admissions", body, (201, 410))
        if not start:  # left for the sweep: expired with a receipt, or before its admission could land
            self.book.to_expire.add(run_id)
            kinds = ["registered", "suspended", "admitted", "expired"] if status == 201 else FINISHED[:2] + ["expired"]
            return kinds, "expired"
        if status != 201:
            raise Unexpected(f"admit: {status}")
        self.start_and_complete(admitted["admission"]["id"], run_id)
        return FINISHED, "completed"

    def expire(self, run_id: str) -> tuple[list[str], str]:
        how = self.rng.choice(EXPIRIES)
        if how == "admitted_unstarted":
            return self.agent_reply(run_id, ttl=4, start=False)
        call = {"id": "c1", "name": "refund", "arguments": '{"amount": 5}'}
        self.book.to_expire.add(run_id)
        if how == "tool":
            self.suspend(run_id, "external_tool", [call], 2)
            return ["registered", "suspended", "expired"], "expired"
        if how == "deny_at_expiry":
            self.suspend(run_id, "approval", [call], 2, {"on_expiry": "deny"})
            return ["registered", "suspended", "expired"], "failed"
        self.suspend(run_id, "approval", [call], 2, {"on_expiry": {"escalate": {"extend_seconds": 3}}})
        return ["registered", "suspended", "escalated", "expired"], "expired"

    def loop(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            scenario = self.pick(SCENARIOS)
            run_id = ""
            try:
                run_id = self.register()
                kinds, state = getattr(self, scenario)(run_id)
            except Unexpected as error:
                with self.book.lock:
                    self.book.abandoned[run_id or f"unregistered-{len(self.book.abandoned)}"] = str(error)
                    if len(self.book.abandoned) <= 5:
                        print(f"unexpected: {error}", flush=True)
                continue
            self.book.expect(run_id, kinds, state, scenario)


# -- the run ----------------------------------------------------------------------------------


def reset() -> None:
    """Empty every table of the app (the database name must end in `bench`)."""
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if not name.endswith("bench"):
        raise SystemExit(f"refusing to empty {name!r}: bench databases end in 'bench'")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE " + ", ".join(common.app_tables(cursor)))


def arguments() -> Any:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--clients", type=int, default=16, help="client threads, each one keep-alive connection")
    p.add_argument("--workers", type=int, default=2, help="gunicorn workers (gthread)")
    p.add_argument("--threads", type=int, default=8, help="threads per gunicorn worker")
    p.add_argument("--celery-concurrency", type=int, default=2, help="Celery worker processes (README: 2)")
    p.add_argument("--sweep-interval", type=int, default=5, help="SWEEP_INTERVAL_SECONDS of the beat")
    p.add_argument("--drain-minutes", type=float, default=60, help="longest wait for the sweep, then the webhooks")
    p.add_argument("--seed", type=int, default=18)
    p.add_argument(
        "--vacuum-seconds",
        type=float,
        default=60,
        help="when the server's autovacuum is off: VACUUM (ANALYZE) the app's tables this often (0: never)",
    )
    p.add_argument(
        "--autovacuum",
        choices=("server", "off"),
        default="server",
        help="off: autovacuum_enabled=false on the app's tables and no VACUUM of the soak's own (issue 50, item 11)",
    )
    return p.parse_args()


def autovacuum_off_on_app_tables() -> list[str]:
    """autovacuum_enabled=false on every app table and its TOAST table; their names (reset by `autovacuum_reset`)."""
    from django.db import connection

    with connection.cursor() as cursor:
        tables = common.app_tables(cursor)
        for table in tables:
            cursor.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)')
    return tables


def autovacuum_reset(tables: list[str]) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f'ALTER TABLE "{table}" RESET (autovacuum_enabled, toast.autovacuum_enabled)')


def load(book: Book, server: common.Gunicorn, tokens: dict[str, Any], args: Any) -> float:
    """`args.clients` threads run scenarios until `args.minutes` have passed; returns the seconds the load took."""
    book.start()
    deadline = time.monotonic() + args.minutes * 60
    drivers = [Driver(server.port, tokens, book, args.seed * 1000 + i) for i in range(args.clients)]
    threads = [threading.Thread(target=d.loop, args=(deadline,)) for d in drivers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return book.now()


def main() -> None:
    args = arguments()
    broker = push.broker_url()
    os.environ["CELERY_BROKER_URL"] = broker
    url = common.setup_django()
    reset()
    tables_off = autovacuum_off_on_app_tables() if args.autovacuum == "off" else []
    if tables_off:
        args.vacuum_seconds = 0
    tokens = {
        "engine": common.make_token(SCOPE, ["engine"], "soak-engine"),
        "bus": common.make_token(SCOPE, ["bus"], "soak-bus"),
        "approvers": [common.make_token(SCOPE, ["approver"], name) for name in ("alice", "bob", "carol")],
        "operator": common.make_token(SCOPE, ["operator"], "soak-operator"),
    }
    receiver, book = push.Receiver(), Book()
    env = {"LOG_LEVEL": "WARNING", "WEBHOOK_ALLOW_PRIVATE": "1", "CELERY_BROKER_URL": broker}
    with common.Gunicorn(url, workers=args.workers, threads=args.threads, env=env) as server:
        directory = Path(tempfile.mkdtemp(prefix="soak-"))
        worker = soak_watch.celery_worker(url, broker, args.celery_concurrency, args.sweep_interval, directory)
        sweeper = soak_watch.celery_worker(
            url, broker, 1, args.sweep_interval, directory, queues="sweep", beat=True, name="soak-sweeper"
        )
        liveness = soak_watch.Liveness(url, server.port)
        try:
            hook = {"url": f"http://127.0.0.1:{receiver.port}/hooks", "scope": SCOPE, "description": "soak receiver"}
            _, endpoint = Driver(server.port, tokens, book, 0).call(
                "webhook create", tokens["operator"], "POST", "/webhooks", hook, (201,)
            )
            if soak_watch.wait_until(soak_checks.swept_once, 120) < 0:
                raise SystemExit("the Celery worker's beat never ran a sweep")
            with liveness, soak_watch.Watch(book, server, [worker, sweeper], url, broker, args.vacuum_seconds):
                load_seconds = load(book, server, tokens, args)
            print(f"sweep and /readyz during the load: {liveness.summary(args.sweep_interval)}", flush=True)
            left = book.to_expire - set(book.abandoned)
            print(f"load done after {load_seconds:.0f} s; waiting for the sweep, then the webhooks", flush=True)
            drained = {
                "sweep_seconds": soak_watch.wait_until(lambda: soak_checks.expired_all(left), args.drain_minutes * 60),
                "webhook_seconds": soak_watch.wait_until(
                    lambda: soak_checks.delivered_all(receiver), args.drain_minutes * 60
                ),
            }
            checks = soak_checks.invariants(book, receiver, str(endpoint["id"]))
            celery_cpu = common.cpu_seconds(soak_watch.tree(worker.pid) + soak_watch.tree(sweeper.pid))
        finally:
            soak_watch.stop_worker(worker)
            soak_watch.stop_worker(sweeper)
            autovacuum_reset(tables_off)
    receiver.close()
    lags = soak_watch.lags(book.t0_wall)
    data = soak_report.summary(
        book,
        args,
        load_seconds,
        lags,
        drained=drained,
        invariants=checks,
        webhook_posts=receiver.posts,
        webhook_messages_seen=receiver.count(),
        vacuums=book.vacuums,
        liveness=liveness.summary(args.sweep_interval),
        celery_cpu_ms_per_message=round(celery_cpu * 1000 / max(1, receiver.count()), 1),
        machine=common.machine(),
    )
    soak_chart.write_chart(book, data["minutes"], args.minutes, common.ROOT / "docs" / "soak.svg")
    common.write_result("soak", data, soak_report.markdown(data))


if __name__ == "__main__":
    main()
