"""What every bench module shares: the bench database, Django, statistics, a counting proxy,
gunicorn and a keep-alive HTTP load generator.

Speed figures are ratios measured in one run against a reference doing the
same work (the machine is shared and noisy); counts (statements, commits,
round trips) are read off the PostgreSQL wire by `CountingProxy`, so they do
not depend on the machine either.
"""

import argparse
import collections
import http.client
import json
import os
import platform
import random
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

APP_TABLES = [
    "suspensions_run",
    "suspensions_suspension",
    "suspensions_approval",
    "suspensions_admission",
    "suspensions_start",
    "suspensions_expiryreceipt",
    "suspensions_closurereceipt",
    "suspensions_event",
    "suspensions_apitoken",
    "suspensions_idempotencykey",
]


# -- the bench database ---------------------------------------------------------------


def bench_database_url() -> str:
    """BENCH_DATABASE_URL, or DATABASE_URL's database with `_bench` appended (never the dev or test database)."""
    explicit = os.environ.get("BENCH_DATABASE_URL")
    if explicit:
        return explicit
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/suspensions")
    parts = urllib.parse.urlsplit(base)
    name = parts.path.lstrip("/")
    if not name.endswith("_bench"):
        name += "_bench"
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def conninfo(url: str) -> dict[str, Any]:
    parts = urllib.parse.urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5432,
        "user": urllib.parse.unquote(parts.username or "postgres"),
        "password": urllib.parse.unquote(parts.password or "") or None,
        "dbname": parts.path.lstrip("/"),
    }


def connect(url: str, **options: Any) -> Any:
    """A plain psycopg connection to `url`'s database (`options`: psycopg's, e.g. autocommit=True)."""
    import psycopg

    return psycopg.connect(**{k: v for k, v in conninfo(url).items() if v is not None}, **options)


def with_port(url: str, port: int) -> str:
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rsplit(":", 1)[0] if parts.port else parts.netloc
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{netloc}:{port}"))


def ensure_database(url: str, *, fresh: bool = False) -> None:
    """Create the database of `url` if it is missing; `fresh`: drop it first (its name must end in "bench")."""
    import psycopg

    info = conninfo(url)
    admin = {**info, "dbname": "postgres"}
    with psycopg.connect(**{k: v for k, v in admin.items() if v is not None}, autocommit=True) as conn:
        if fresh:
            if not info["dbname"].endswith("bench"):
                raise SystemExit(f"refusing to drop {info['dbname']!r}: bench databases end in 'bench'")
            conn.execute(f'DROP DATABASE IF EXISTS "{info["dbname"]}" WITH (FORCE)')
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [info["dbname"]]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{info["dbname"]}"')


# The audit checkpoints' signing key of every bench process (settings refuse to start without one).
BENCH_AUDIT_KEY = "YmVuY2gtb25seS1hdWRpdC1zaWduaW5nLWtleS0wMDA="


def setup_django(url: str | None = None, *, migrate: bool = True) -> str:
    """Point Django at the bench database (created and migrated on first use) and set it up."""
    url = url or bench_database_url()
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret")
    os.environ.setdefault("AUDIT_SIGNING_KEY", BENCH_AUDIT_KEY)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "suspensions_project.settings")
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    os.environ.setdefault("CELERY_BROKER_URL", "memory://")
    ensure_database(url)
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
    return url


def reset_tables() -> None:
    """Empty the app tables; refuses any database whose name does not end in `bench`."""
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if not name.endswith("bench"):
        raise SystemExit(f"refusing to empty {name!r}: bench databases end in 'bench'")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE " + ", ".join(APP_TABLES))


def make_token(scope: str, roles: Iterable[str], name: str) -> str:
    from suspensions.tokens import create_token

    return create_token(scope=scope, roles=roles, name=name)[1]


def principal(scope: str, roles: Iterable[str], name: str = "bench") -> Any:
    from suspensions.principals import Principal

    return Principal(name=f"token:{name}", grants=((scope, frozenset(roles)),))


# -- statistics ----------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of `values`; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(round(q / 100 * len(ordered) + 0.5))))
    return ordered[rank - 1]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return 0.0
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


# -- results -------------------------------------------------------------------------


def out_dir() -> Path:
    path = Path(os.environ.get("BENCH_OUT_DIR") or ROOT / "bench" / "results" / "latest")
    path.mkdir(parents=True, exist_ok=True)
    return path


def machine() -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "postgresql": server,
        "platform": platform.platform(),
        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def write_result(name: str, data: dict[str, Any], markdown: str) -> Path:
    """bench/results/latest/<name>.json and .md (or under BENCH_OUT_DIR); prints the markdown."""
    directory = out_dir()
    (directory / f"{name}.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    (directory / f"{name}.md").write_text(markdown + "\n")
    update_doc(name, markdown)
    print(markdown)
    print(f"\nresults: {directory / (name + '.json')}")
    return directory / f"{name}.json"


def update_doc(name: str, markdown: str) -> None:
    """Replace the generated block between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` in docs/benchmarks.md.

    Only the tables are generated; the reading of them (targets met or not,
    what bounds them) is written by hand around the markers.
    """
    doc = ROOT / "docs" / "benchmarks.md"
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = doc.read_text() if doc.exists() else ""
    if start not in text or end not in text:
        return
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    doc.write_text(f"{head}{start}\n{markdown}\n{end}{tail}")


def table(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; figures are their median")
    return p


def gunicorn_parser(description: str, *, threads: int) -> argparse.ArgumentParser:
    """`parser` plus the load of a gunicorn phase: requests per phase, client connections, workers x threads."""
    p = parser(description)
    p.set_defaults(rounds=5)
    p.add_argument("--requests", type=int, default=400, help="requests per phase")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=threads)
    return p


# -- counting proxy --------------------------------------------------------------------

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
TX_COMMANDS = {"BEGIN", "COMMIT", "ROLLBACK"}


class CountingProxy:
    """A TCP proxy in front of PostgreSQL that reads the client's side of the wire protocol.

    Counts per direction client -> server: `round_trips` (one per Sync or
    simple Query message: each waits for the server), `statements` (Execute
    messages and simple queries other than BEGIN (with or without options),
    COMMIT, ROLLBACK and the pool's empty health check), `commits`, `begins`
    and `checks`. It refuses TLS so the bytes stay readable; it is for
    counting passes, never timing.
    """

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.reset()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> None:
        with self.lock:
            self.counts = {"round_trips": 0, "statements": 0, "commits": 0, "begins": 0, "checks": 0}

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)

    def close(self) -> None:
        self.closed = True
        self.listener.close()

    def _bump(self, **deltas: int) -> None:
        with self.lock:
            for key, value in deltas.items():
                self.counts[key] += value

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            first = _read_startup(client)
            while struct.unpack("!I", first[4:8])[0] in (SSL_REQUEST, GSSENC_REQUEST):
                client.sendall(b"N")
                first = _read_startup(client)
            server = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server.sendall(first)
        threading.Thread(target=_pipe, args=(server, client), daemon=True).start()
        self._client_to_server(client, server)

    def _client_to_server(self, client: socket.socket, server: socket.socket) -> None:
        buffer = b""
        last_parse_empty = False
        try:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                server.sendall(chunk)
                buffer += chunk
                while len(buffer) >= 5:
                    kind = buffer[0:1]
                    length = struct.unpack("!I", buffer[1:5])[0]
                    if len(buffer) < 1 + length:
                        break
                    body, buffer = buffer[5 : 1 + length], buffer[1 + length :]
                    last_parse_empty = self._count(kind, body, last_parse_empty)
        except OSError:
            pass
        finally:
            for s in (client, server):
                try:
                    s.close()
                except OSError:
                    pass

    def _count(self, kind: bytes, body: bytes, last_parse_empty: bool) -> bool:
        if kind == b"Q":
            text = body.rstrip(b"\x00").decode("utf-8", "replace").strip().rstrip(";").upper()
            if text in TX_COMMANDS:
                self._bump(round_trips=1, commits=int(text == "COMMIT"), begins=int(text == "BEGIN"))
            elif text.startswith("BEGIN "):
                # A transaction opened with its options (SQLAlchemy's `BEGIN ISOLATION LEVEL ...`, as DBOS sends): a begin.
                self._bump(round_trips=1, begins=1)
            elif not text:
                self._bump(round_trips=1, checks=1)
            else:
                self._bump(round_trips=1, statements=1)
        elif kind == b"P":
            # Parse: statement name \0 query \0 ...
            name_end = body.index(b"\x00")
            query = body[name_end + 1 : body.index(b"\x00", name_end + 1)]
            return not query.strip()
        elif kind == b"E":
            self._bump(**({"checks": 1} if last_parse_empty else {"statements": 1}))
        elif kind == b"S":
            self._bump(round_trips=1)
        return last_parse_empty


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _read_startup(sock: socket.socket) -> bytes:
    head = _read_exact(sock, 4)
    length = struct.unpack("!I", head)[0]
    return head + _read_exact(sock, length - 4)


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            chunk = source.recv(65536)
            if not chunk:
                break
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (source, target):
            try:
                s.close()
            except OSError:
                pass


@contextmanager
def django_through(port: int) -> Any:
    """Route Django's default connection (and its pool) through `port` for the block."""
    from django.db import connection

    connection.close()
    connection.close_pool()
    saved = connection.settings_dict["PORT"]
    connection.settings_dict["PORT"] = port
    try:
        yield
    finally:
        connection.close()
        connection.close_pool()
        connection.settings_dict["PORT"] = saved


def per_op(before: dict[str, int], after: dict[str, int], ops: int) -> dict[str, float]:
    return {key: round((after[key] - before[key]) / ops, 2) for key in after}


# -- gunicorn ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def socket_inodes(pid: int) -> list[str]:
    """The inodes of the sockets process `pid` holds open; an fd closed while listed is skipped."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    inodes = []
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.append(link[8:-1])
    return inodes


class Gunicorn:
    """gunicorn with threaded workers (gthread) and keep-alive, serving the project on 127.0.0.1."""

    def __init__(
        self,
        database_url: str,
        *,
        workers: int = 2,
        threads: int = 16,
        env: dict[str, str] | None = None,
        app: str = "suspensions_project.wsgi",
        quiet: bool = False,
        root: Path = ROOT,
    ):
        """`root`: the checkout to serve (another one compares two versions of the code side by side)."""
        self.port = free_port()
        environment = {
            **os.environ,
            "DATABASE_URL": database_url,
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", "bench-only-secret"),
            "AUDIT_SIGNING_KEY": os.environ.get("AUDIT_SIGNING_KEY", BENCH_AUDIT_KEY),
            "DB_POOL_MAX": str(threads + 2),
            "DB_POOL_MIN": "1",
            **(env or {}),
        }
        self.process = subprocess.Popen(
            [
                str(root / ".venv" / "bin" / "gunicorn"),
                app,
                "--worker-class",
                "gthread",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--keep-alive",
                "75",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--log-level",
                "warning",
            ],
            cwd=root,
            env=environment,
            # Tests that stop the database on purpose silence the pool's reconnect warnings.
            stderr=subprocess.DEVNULL if quiet else None,
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("gunicorn did not come up")

    def worker_pids(self) -> list[int]:
        try:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        except OSError:
            return []
        return [int(pid) for pid in children]

    def cpu_seconds(self) -> float:
        """User + system CPU of the workers so far (Linux /proc): where a request's time goes."""
        return cpu_seconds(self.worker_pids())

    def worker_of(self, client: "Client", tries: int = 5) -> int | None:
        """The worker process holding the server side of `client`'s connection (Linux /proc).

        Both /proc reads race with the workers' other sockets: an fd listed may be closed before
        its link is read (that fd is skipped, not its whole process), and /proc/net/tcp, read in
        pages while the table changes, can miss a line; so a miss is looked for again.
        """
        port = client.conn.sock.getsockname()[1]
        for _ in range(tries):
            inodes = {
                fields[9]
                for fields in (line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:])
                if int(fields[1].split(":")[1], 16) == self.port and int(fields[2].split(":")[1], 16) == port
            }
            for pid in self.worker_pids():
                if inodes & set(socket_inodes(pid)):
                    return pid
            time.sleep(0.05)
        return None

    def clients(self, secret: str, n: int, attempts: int = 200) -> list["Client"]:
        """`n` keep-alive connections spread evenly over the workers, as a proxy's requests are.

        A gthread worker keeps every connection it accepts for its whole life; `n` clients that
        connect at once mostly land on one worker (8 of 8 in 4 runs of 5), which leaves the other
        worker's core idle and makes the figures measure one process. So each connection makes one
        request, is kept if its worker has fewer than its share, and otherwise held open (so the
        same worker is not offered it again) until the end. `spread` says how it ended.
        """
        if os.environ.get("BENCH_SPREAD", "1") == "0":
            # As before spreading: each client connects on its first request, all at once when the phase starts.
            return [Client(self.port, secret) for _ in range(n)]
        workers = self.worker_pids()
        share = -(-n // max(1, len(workers)))
        kept: list[tuple[int | None, Client]] = []
        extra: list[tuple[int | None, Client]] = []
        for _ in range(attempts):
            if len(kept) >= n:
                break
            client = Client(self.port, secret)
            client.call("GET", "/healthz")
            pid = self.worker_of(client)
            room = pid in workers and sum(1 for p, _c in kept if p == pid) < share
            (kept if room else extra).append((pid, client))
        missing = n - len(kept)
        kept += extra[:missing]
        for _pid, client in extra[missing:]:
            client.close()
        return [client for _pid, client in kept]

    def spread(self, clients: list["Client"]) -> list[int]:
        """Connections per worker of these (connected) clients, largest first."""
        return sorted(collections.Counter(self.worker_of(c) for c in clients).values(), reverse=True)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> "Gunicorn":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Client:
    """One keep-alive HTTP/1.1 connection with a bearer token."""

    def __init__(self, port: int, secret: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        payload = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, body=payload, headers=self.headers)
        response = self.conn.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self.conn.close()


def run_threads(clients: int, work: Callable[[int], list[float]]) -> tuple[float, list[float]]:
    """Run `work(i)` in `clients` threads released together; returns (wall seconds, all latencies)."""
    barrier = threading.Barrier(clients + 1)
    results: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []

    def body(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if errors:
        raise errors[0]
    return wall, [x for r in results for x in r]


def split(items: list[Any], parts: int) -> list[list[Any]]:
    return [items[i::parts] for i in range(parts)]


# -- fixtures in bulk ------------------------------------------------------------------


def bulk_runs(n: int, scope: str, agent_id: str = "bench-agent") -> list[Any]:
    """`n` registered runs (running, revision 1) written by bulk_create: set-up, not the thing measured.

    The model's own defaults fill every other column, so a field added to Run needs nothing here.
    """
    from suspensions import scopes
    from suspensions.models import Run

    levels = scopes.levels(scope)
    now = datetime.now(UTC)
    runs = [Run(scope=scope, **levels, agent_id=agent_id, created_at=now, updated_at=now) for _ in range(n)]
    Run.objects.bulk_create(runs, batch_size=2000)
    return [run.id for run in runs]


def continuation() -> dict[str, Any]:
    """The continuation of tests.helpers, a realistic small pause."""
    from tests.helpers import continuation as build

    return build()


def pending_call() -> list[dict[str, Any]]:
    from tests.helpers import call

    return [call()]


# Tables named like any of the patterns given: every table of the app, the push tables included (APP_TABLES
# lists only the claim path's); the LangGraph comparison adds its checkpointer's (vacuum_tables).
APP_TABLES_SQL = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE ANY(%s)"


def autovacuum_off(pg: Any) -> bool:
    return bool(pg.execute("SHOW autovacuum").fetchone()[0] == "off")


def app_tables(cursor: Any, patterns: Iterable[str] = ("suspensions_%",)) -> list[str]:
    """The names of the tables named like `patterns` (`cursor`: psycopg's or Django's)."""
    cursor.execute(APP_TABLES_SQL, [list(patterns)])
    return [row[0] for row in cursor.fetchall()]


def vacuum_tables(pg: Any, patterns: Iterable[str] = ("suspensions_%",)) -> None:
    """VACUUM (ANALYZE) the tables named like `patterns`, on `pg` (a psycopg connection in autocommit)."""
    tables = app_tables(pg.cursor(), patterns)
    pg.execute("VACUUM (ANALYZE) " + ", ".join(f'"{t}"' for t in tables))


def between_rounds(url: str, round_no: int, patterns: Iterable[str] = ("suspensions_%",)) -> bool:
    """On a server with autovacuum off (this machine's), what autovacuum would have done by now; False when it is on.

    Without it the tables, emptied at the bench's start, are never analyzed:
    a statement the service prepares keeps the plan PostgreSQL made for empty
    tables (no ANALYZE ever invalidates it), and the tables keep every dead
    row. On 2026-12-02 that made the service's PostgreSQL CPU per cycle grow
    round after round (2.0 to 12.4 ms in five rounds of bench/resume.py)
    while R1, planned afresh at every call, stayed at 1.1-1.6 ms. Run outside
    the timed phases before round `round_no`, for every way alike.
    """
    with connect(url, autocommit=True) as pg:
        if not autovacuum_off(pg):
            return False
        vacuum_tables(pg, patterns)
    print(f"round {round_no}: autovacuum is off here, so VACUUM (ANALYZE) first", flush=True)
    return True


def connection_cursor() -> Any:
    from django.db import connection

    return connection.cursor()


def round_ratios(phases: dict[str, list[dict[str, Any]]], reference: str, metric: str) -> dict[str, str]:
    """Each way over the reference at the same client count, round by round: "median (min-max)".

    A ratio taken inside one round compares phases that ran seconds apart, so
    the machine's drift between rounds cancels out.
    """
    out = {}
    for key, runs in phases.items():
        way, clients = key.split("@")
        ref = phases.get(f"{reference}@{clients}")
        if way == reference or ref is None:
            continue
        values = [r[metric] / b[metric] for r, b in zip(runs, ref, strict=False) if b[metric]]
        out[f"{key} / {reference}@{clients}"] = spread(values)
    return out


def spread(values: list[float]) -> str:
    """Ratios of the rounds as "median (min-max)"."""
    return f"{median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def median_interval(values: list[float], draws: int = 4000) -> tuple[float, float]:
    """A 95% bootstrap interval of the median of `values` (the rounds' ratios): how far the median itself may be off.

    The rounds are drawn again with replacement `draws` times (a fixed seed, so a rerun on the same figures
    prints the same interval); the 2.5th and 97.5th percentiles of those medians bound it.
    """
    pick = random.Random(0)
    medians = sorted(median(pick.choices(values, k=len(values))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def postgres_cpu() -> dict[int, float]:
    """CPU so far of each PostgreSQL process on this machine (backends, WAL writer, ...): its side of a phase."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == "postgres":
                pids.append(int(entry.name))
        except OSError:
            continue
    return {pid: cpu_seconds([pid]) for pid in pids}


def postgres_cpu_since(before: dict[int, float]) -> float:
    """PostgreSQL's CPU seconds since `before` (a backend that exited meanwhile is not counted)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in postgres_cpu().items())


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU so far of these processes (Linux /proc); a process gone meanwhile counts nothing."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total
