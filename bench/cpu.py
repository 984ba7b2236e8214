"""Issue 18: the web process's CPU per request, against a floor endpoint served by the same gunicorn.

One gunicorn (`bench.floor_app`: the project plus two bench-only reference
endpoints, see bench/floor_app.py), driven by keep-alive connections in
threads. Each phase sends N requests of one kind; the workers' user + system
CPU is read from /proc before and after it, and so is PostgreSQL's (every
server process on the machine: nothing else uses it during a phase). Kinds:

- floor: DRF APIView + bearer token (one raw indexed SELECT) + one indexed SELECT;
- auth: the same view with the project's own authentication and throttle classes;
- pause: `POST /runs/{id}/suspend` of a registered run (an external_tool pause);
- resume: the one-shot `POST /runs/{id}/resume` of the pauses the pause phase made;
- roundtrip: register, suspend for approval, approve, start (4 requests; CPU per request, N/4 round trips).

Rounds are interleaved (the order rotates; resume always right after its
pause phase), and each ratio to the floor is taken inside its round: the
figures are the median (min-max) over the rounds.

With `--baseline DIR` (another checkout of the project, e.g. the commit
before a change, with bench/floor_app.py copied in) a second gunicorn serves
that code, and every phase runs on both, back to back in alternating order:
the `after / before` ratios of a change are then taken side by side too.
The baseline serves a database of its own, migrated by its own code (the
schema may have moved since), and both sides then register their runs over
HTTP.

    .venv/bin/python bench/cpu.py [--rounds 5] [--requests 400] [--clients 8] [--baseline DIR]
"""

import json
import os
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import common

SCOPE = "bench-cpu"
RESULTS = [{"call_id": "c1", "content": {"ok": True, "rows": 3}}]
KINDS = ["floor", "auth", "pause", "resume", "roundtrip"]


def suspend_body(revision: int, reason: str) -> dict[str, Any]:
    return {
        "revision": revision,
        "reason": reason,
        "pending": common.pending_call(),
        "continuation": common.continuation(),
    }


def expect(status: int, body: bytes, wanted: int) -> Any:
    assert status == wanted, body[:300]
    return json.loads(body)


class Round:
    """The work of one round: the runs it pauses, then resumes; each call returns the requests it sent."""

    def __init__(self, n: int, conns: list[common.Client] | None = None) -> None:
        """`n` registered runs: written in bulk, or registered over `conns` (a baseline's own database)."""
        self.runs = common.bulk_runs(n, SCOPE) if conns is None else register_over_http(n, conns)
        self.paused: dict[Any, str] = {}
        self.floor_run = self.runs[0]

    def floor(self, client: common.Client, i: int) -> int:
        expect(*client.call("GET", f"/api/v1/bench/floor/{self.floor_run}"), 200)
        return 1

    def auth(self, client: common.Client, i: int) -> int:
        expect(*client.call("GET", f"/api/v1/bench/auth/{self.floor_run}"), 200)
        return 1

    def pause(self, client: common.Client, i: int) -> int:
        run_id = self.runs[i]
        body = expect(*client.call("POST", f"/api/v1/runs/{run_id}/suspend", suspend_body(1, "external_tool")), 201)
        self.paused[run_id] = body["id"]
        return 1

    def resume(self, client: common.Client, i: int) -> int:
        run_id = self.runs[i]
        version = {"run_id": str(run_id), "suspension_id": self.paused[run_id], "run_revision": 2}
        expect(*client.call("POST", f"/api/v1/runs/{run_id}/resume", {"version": version, "results": RESULTS}), 201)
        return 1

    def roundtrip(self, client: common.Client, i: int) -> int:
        run = expect(*client.call("POST", "/api/v1/runs", {"agent_id": "bench-agent", "scope": SCOPE}), 201)
        s = expect(*client.call("POST", f"/api/v1/runs/{run['id']}/suspend", suspend_body(1, "approval")), 201)
        version = {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"]}
        decided = expect(
            *client.call("POST", f"/api/v1/approvals/{s['id']}/decide", {"version": version, "decision": "approve"}),
            201,
        )
        expect(*client.call("POST", f"/api/v1/admissions/{decided['admission']['id']}/start"), 201)
        return 4


def register_over_http(n: int, conns: list[common.Client]) -> list[Any]:
    """`n` runs registered through the API (set-up, not measured): a baseline's schema may differ from this one's."""
    chunks = common.split(list(range(n)), len(conns))
    ids: list[list[str]] = [[] for _ in conns]

    def send(c: int) -> list[float]:
        for _ in chunks[c]:
            run = expect(*conns[c].call("POST", "/api/v1/runs", {"agent_id": "bench-agent", "scope": SCOPE}), 201)
            ids[c].append(run["id"])
        return []

    common.run_threads(len(conns), send)
    return [run_id for chunk in ids for run_id in chunk]


def baseline_database(root: Path, url: str) -> tuple[str, str]:
    """The baseline checkout's own bench database (migrated by its own code) and a token in it.

    The code before a schema change cannot serve this checkout's tables, so it
    gets a database of its own: `<bench database>_before_bench`, made afresh
    each run (a baseline migrated by other code, say a later checkout, would
    keep that code's columns, which the baseline does not write).
    """
    parts = urllib.parse.urlsplit(url)
    before = urllib.parse.urlunsplit(parts._replace(path=parts.path + "_before_bench"))
    common.ensure_database(before, fresh=True)
    env = {**os.environ, "DATABASE_URL": before, "DJANGO_DEBUG": "0", "CELERY_BROKER_URL": "memory://"}
    manage = [sys.executable, str(root / "manage.py")]
    subprocess.run([*manage, "migrate", "--verbosity", "0"], env=env, cwd=root, check=True)
    made = subprocess.run(
        [*manage, "createtoken", "--scope", SCOPE, "--roles", "engine,approver", "--name", "bench-cpu"],
        env=env,
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return before, made.stdout.strip().splitlines()[-1]


def phase(server: common.Gunicorn, conns: list[common.Client], n: int, kind: str, work: Round) -> dict[str, Any]:
    """`n` requests of `kind` (a round trip is 4 of them) from all the connections at once."""
    call: Callable[[common.Client, int], int] = getattr(work, kind)
    chunks = common.split(list(range(n // 4 if kind == "roundtrip" else n)), len(conns))
    sent = [0] * len(conns)

    def send(c: int) -> list[float]:
        for i in chunks[c]:
            sent[c] += call(conns[c], i)
        return []

    before, pg_before = server.cpu_seconds(), common.postgres_cpu()
    wall, _ = common.run_threads(len(conns), send)
    cpu, pg = server.cpu_seconds() - before, common.postgres_cpu_since(pg_before)
    requests = sum(sent)
    return {
        "requests": requests,
        "cpu_ms_per_request": round(cpu / requests * 1000, 3),
        "pg_ms_per_request": round(pg / requests * 1000, 3),
        "per_s": round(requests / wall, 1),
    }


def main() -> dict[str, Any]:
    p = common.gunicorn_parser(__doc__.splitlines()[0], threads=16)
    p.add_argument("--baseline", type=Path, help="another checkout to measure side by side (the code before)")
    args = p.parse_args()
    url = common.setup_django()
    common.reset_tables()
    secret = common.make_token(SCOPE, ["engine", "approver"], "bench-cpu")
    roots = {"": common.ROOT} if args.baseline is None else {"": common.ROOT, "before:": args.baseline.resolve()}
    urls, secrets = {"": url}, {"": secret}
    if args.baseline is not None:
        urls["before:"], secrets["before:"] = baseline_database(roots["before:"], url)
    phases: dict[str, list[dict[str, Any]]] = {}
    with ExitStack() as stack:
        servers = {
            label: stack.enter_context(
                common.Gunicorn(
                    urls[label],
                    workers=args.workers,
                    threads=args.threads,
                    app="bench.floor_app:application",
                    root=root,
                )
            )
            for label, root in roots.items()
        }
        conns = {label: s.clients(secrets[label], args.clients) for label, s in servers.items()}
        # With a baseline, both sides register their runs over HTTP, each in its own database.
        setup = {label: conns[label] if args.baseline is not None else None for label in servers}
        for label, server in servers.items():
            warm = Round(args.requests, setup[label])
            for kind in KINDS:  # every worker thread has its connection and its imports before the first figure
                phase(server, conns[label], args.requests // 4, kind, warm)
        for round_no in range(args.rounds):
            for label in servers:
                common.between_rounds(urls[label], round_no + 1)
            works = {label: Round(args.requests, setup[label]) for label in servers}
            order = KINDS[round_no % len(KINDS) :] + KINDS[: round_no % len(KINDS)]
            order.remove("resume")
            order.insert(order.index("pause") + 1, "resume")
            labels = list(servers) if round_no % 2 == 0 else list(reversed(servers))
            for kind in order:
                for label in labels:
                    result = phase(servers[label], conns[label], args.requests, kind, works[label])
                    phases.setdefault(label + kind, []).append(result)
                    print(f"round {round_no + 1} {label}{kind}: {result}", flush=True)
        for clients in conns.values():
            for c in clients:
                c.close()
    data = {
        "machine": common.machine(),
        "args": {**vars(args), "baseline": str(args.baseline or "")},
        "rounds": phases,
        "figures": figures(phases, list(roots)),
        "split": split_pass(secret, args.requests),
        "calls": calls_pass(secret, CALLS_REQUESTS),
    }
    common.write_result("cpu", data, markdown(data))
    return data


# -- where the time goes, in-process --------------------------------------------------------

SPLIT_PARTS = ["floor", "auth", "validation", "statements", "rest"]
SPLIT_PASSES = 3


def split_pass(secret: str, n: int) -> dict[str, dict[str, float]]:
    """In-process (Django's test client, the same middleware and views): each request's CPU split in parts.

    Three passes after a warm-up one, each part the median of the passes.
    This thread's CPU time is added up around the project's authentication,
    the view's body validation (`views.parsed`) and the service call
    (its statements, ORM or SQL, with BEGIN and COMMIT, and the rows and
    digests it builds). floor: the floor request's whole CPU; auth: the auth
    request's beyond it (the project's authentication and throttle instead
    of the floor's minimal token SELECT); the rest: what is left (body
    parsing, the answer's rendering, logs, metrics).
    """
    import floor_app  # noqa: F401 (the bench URLconf: the floor and auth endpoints)

    from suspensions import services
    from suspensions.api import views

    spent: dict[str, float] = {}

    def timed(owner: Any, name: str, part: str) -> None:
        inner = getattr(owner, name)

        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.thread_time()
            try:
                return inner(*a, **k)
            finally:
                spent[part] = spent.get(part, 0.0) + time.thread_time() - t0

        setattr(owner, name, wrapper)

    timed(views, "parsed", "validation")
    for name in ("pause_run", "resume_run", "register_run", "decide", "start_admission"):
        timed(services, name, "statements")
    local = in_process(secret)
    passes: dict[str, list[dict[str, float]]] = {}
    for number in range(SPLIT_PASSES + 1):  # the first pass warms up and is left out
        work = Round(n)
        for kind in KINDS:
            count = n // 4 if kind == "roundtrip" else n
            spent.clear()
            t0 = time.thread_time()
            sent = sum(getattr(work, kind)(local, i) for i in range(count))
            total = time.thread_time() - t0
            if number:
                measured = {part: v / sent * 1000 for part, v in spent.items()}
                passes.setdefault(kind, []).append({**measured, "total": total / sent * 1000})
    out = {
        kind: {part: round(common.median([p.get(part, 0.0) for p in runs]), 3) for part in runs[0]}
        for kind, runs in passes.items()
    }
    floor = out["floor"]["total"]
    for kind in ("pause", "resume", "roundtrip"):
        row = out[kind]
        row["floor"] = floor
        row["auth"] = round(out["auth"]["total"] - floor, 3)
        row.setdefault("validation", 0.0)
        row["rest"] = round(row["total"] - floor - row["auth"] - row["validation"] - row["statements"], 3)
    return out


def in_process(secret: str) -> Any:
    """Django's test client in the shape of common.Client: the same middleware and views, no server."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    class Local:
        def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
            payload = json.dumps(body) if body is not None else ""
            response = client.generic(method, path, payload, content_type="application/json")
            return response.status_code, response.content

    return Local()


def wsgi_local(secret: str) -> Any:
    """The WSGI application called as gunicorn calls it, in the shape of common.Client: no server, no test client.

    Unlike Django's test client, each request ends as a served one does: the
    request_finished signal returns the connection to the pool, and the next
    request draws one again (with the pool's check).
    """
    import io
    import sys

    import floor_app

    def environ(method: str, path: str, raw: bytes) -> dict[str, Any]:
        return {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1:8000",
            "HTTP_AUTHORIZATION": f"Bearer {secret}",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(raw)),
            "wsgi.input": io.BytesIO(raw),
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }

    class Local:
        def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
            statuses: list[str] = []
            raw = json.dumps(body).encode() if body is not None else b""
            answer = floor_app.application(environ(method, path, raw), lambda status, headers: statuses.append(status))
            try:
                content = b"".join(answer)
            finally:
                answer.close()  # type: ignore[attr-defined]  # (Django's response: request_finished)
            return int(statuses[0].split()[0]), content

    return Local()


CALLS_REQUESTS = 100


def calls_pass(secret: str, n: int) -> dict[str, float]:
    """In-process: Python function calls per request of each kind, counted by `sys.setprofile`.

    Unlike CPU time this count does not move with the machine's load: the
    same code gives the same figure in every run (to a call or two: ids and
    clocks differ). It weighs a call to a small helper like one to a big
    one, so it is a guide to where the Python work is, not a second clock.
    The requests go to the WSGI application as gunicorn sends them
    (`wsgi_local`), so a request's pool checkout counts too.
    """
    import sys

    local = wsgi_local(secret)
    calls = [0]

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[0] += 1

    out: dict[str, float] = {}
    for number in range(2):  # the first pass warms up (imports, caches, prepared statements)
        work = Round(n)
        for kind in KINDS:
            count_of = n // 4 if kind == "roundtrip" else n
            calls[0] = 0
            sys.setprofile(count)
            try:
                sent = sum(getattr(work, kind)(local, i) for i in range(count_of))
            finally:
                sys.setprofile(None)
            if number:
                out[kind] = round(calls[0] / sent, 1)
    return out


def whole(phase: dict[str, Any]) -> float:
    """CPU per request of the workers and of PostgreSQL together (older result files have no PostgreSQL share)."""
    return float(phase["cpu_ms_per_request"] + phase.get("pg_ms_per_request", 0.0))


def figures(phases: dict[str, list[dict[str, Any]]], labels: list[str]) -> dict[str, dict[str, str]]:
    """Per kind: CPU per request, its ratio to the same code's floor, and (with a baseline) after / before."""
    out = {}
    for label in labels:
        floor = phases[label + "floor"]
        for kind in KINDS:
            runs = phases[label + kind]
            row = {
                "cpu_ms_per_request": common.spread([r["cpu_ms_per_request"] for r in runs]),
                "ratio_to_floor": common.spread(
                    [r["cpu_ms_per_request"] / f["cpu_ms_per_request"] for r, f in zip(runs, floor, strict=True)]
                ),
                "requests_per_s": common.spread([r["per_s"] for r in runs]),
            }
            if len(labels) > 1:
                before = phases["before:" + kind]
                row["cpu_after_over_before"] = (
                    common.spread(
                        [r["cpu_ms_per_request"] / b["cpu_ms_per_request"] for r, b in zip(runs, before, strict=True)]
                    )
                    if not label
                    else "-"
                )
                wholes = [whole(r) / whole(b) for r, b in zip(runs, before, strict=True)]
                row["whole_after_over_before"] = "-" if label else common.spread(wholes)
                row["whole_median_interval"] = "-" if label else "{:.2f}-{:.2f}".format(*common.median_interval(wholes))
            out[label + kind] = row
    return out


def markdown(data: dict[str, Any]) -> str:
    a = data["args"]
    rows = [[kind, *f.values()] for kind, f in data["figures"].items()]
    headers = ["kind", "CPU ms/request", "ratio to floor (per round)", "requests/s"]
    if a["baseline"]:
        headers += [
            "CPU after / before (per round)",
            "with PostgreSQL's CPU, after / before",
            "its median's 95% interval",
        ]
    split = data["split"]
    kinds = ["pause", "resume", "roundtrip"]
    split_rows = [[part, *(split[k][part] for k in kinds)] for part in [*SPLIT_PARTS, "total"]]
    return "\n".join(
        [
            f"### gunicorn CPU per request ({a['rounds']} rounds, median (min-max); {a['requests']} requests per "
            f"phase, {a['clients']} clients, {a['workers']} workers x {a['threads']} threads)",
            "",
            common.table(headers, rows),
            "",
            f"Where the time goes, in-process (Django's test client, {a['requests']} requests of each kind; "
            "CPU ms per request; roundtrip: per request of the 4):",
            "",
            common.table(["part", *kinds], split_rows),
            "",
            f"Python function calls per request, in-process ({CALLS_REQUESTS} requests of each kind to the WSGI "
            "application as gunicorn calls it, `sys.setprofile`; the same code gives the same count in any load):",
            "",
            common.table(
                ["kind", "calls/request", "ratio to floor"],
                [[k, c, round(c / data["calls"]["floor"], 2)] for k, c in data["calls"].items()],
            ),
        ]
    )


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"took {time.monotonic() - started:.0f} s")
