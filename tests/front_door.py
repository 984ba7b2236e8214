"""The production front door, started for real: gunicorn -c gunicorn.conf.py behind nginx with
deploy/nginx/suspensions.conf, and clients that never finish their request header.

Shared by tests/ops/test_slow_clients.py and bench/slow_clients.py. Each server runs in the
foreground in its own process group, on a free port, writing its log under a temporary
directory; nginx runs with a temporary prefix, so it touches neither /etc/nginx nor /var/lib/nginx.
"""

import http.client
import os
import re
import selectors
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import psutil

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "nginx" / "suspensions.conf"
START_SECONDS = 60
# A request line and one header line, never the blank line that ends the header.
PARTIAL_HEADER = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url(settings_dict: dict[str, Any]) -> str:
    """DATABASE_URL of a Django connection's database (in the tests: pytest-django's test_<name>)."""
    db = settings_dict
    auth = quote(db["USER"], safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def render(values: dict[str, str], template: Path = TEMPLATE) -> str:
    """The template with its ${SUSPENSIONS_...} placeholders filled in, as envsubst would; nginx's $variables stay."""
    rendered = string.Template(template.read_text()).safe_substitute(values)
    # Comments may name a placeholder; a directive must not keep one.
    directives = "\n".join(line for line in rendered.splitlines() if not line.lstrip().startswith("#"))
    left = sorted(set(re.findall(r"\$\{?(SUSPENSIONS_[A-Z_]+)", directives)))
    if left:
        raise ValueError(f"no value for {', '.join(left)}")
    return rendered


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if found is None:
        raise RuntimeError("nginx is not installed: `make proxy` installs Debian's package")
    return found


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


def request(
    port: int,
    method: str,
    path: str,
    *,
    timeout: float,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Answer:
    """One request on a new connection; TimeoutError (an OSError) if any step takes longer than `timeout`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        conn.close()


class Server:
    """A server process in its own session (its children stop with it), its log, and its port."""

    def __init__(self, name: str, argv: list[str], *, port: int, log: Path, env: dict[str, str] | None = None) -> None:
        self.name, self.port, self.log = name, port, log
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_until_serving(self) -> None:
        """Until /healthz answers 200 through this server; RuntimeError with its log if it exits or never does."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if request(self.port, "GET", "/healthz", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not answer /healthz within {START_SECONDS} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start_gunicorn(
    directory: Path, db_url: str, *, workers: int = 2, threads: int = 4, extra_env: dict[str, str] | None = None
) -> Server:
    """gunicorn as the README starts it (gunicorn.conf.py, DEBUG off), on a free port of 127.0.0.1.

    `extra_env` adds to (or overrides) the environment below, as an operator's would.
    """
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or "front-door-secret",
        "DATABASE_URL": db_url,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        # Plain HTTP on the loopback: no TLS in front, so no secure-only cookies or redirects.
        "DJANGO_SECURE_COOKIES": "0",
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "DB_POOL_MIN": "1",
        "DB_POOL_MAX": str(threads),
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": str(workers),
        "GUNICORN_THREADS": str(threads),
        **(extra_env or {}),
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    argv = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "suspensions_project.wsgi"]
    server = Server("gunicorn", argv, port=port, log=directory / "gunicorn.log", env=env)
    try:
        server.wait_until_serving()
    except BaseException:
        server.stop()
        raise
    return server


def nginx_conf(directory: Path, site: Path) -> str:
    """A top-level nginx.conf around the rendered site: temporary paths only, as root or not."""
    temp = "\n".join(
        f"    {kind}_temp_path {directory / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    # Workers keep root's identity: they must reach the temporary paths under a 0700 directory.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return (
        f"{user}worker_processes 1;\n"
        "events { worker_connections 4096; }\n"
        "http {\n"
        "    access_log off;\n"
        f"{temp}\n"
        f"    include {site};\n"
        "}\n"
    )


def start_nginx(
    directory: Path, upstream_port: int, template: Path = TEMPLATE, *, second_upstream_port: int | None = None
) -> "Nginx":
    """nginx in the foreground with the repository's site config, listening on a free port of 127.0.0.1.

    Its two upstream nodes are `upstream_port` and `second_upstream_port` (by default the same node twice).
    """
    port = free_port()
    site = directory / "suspensions.conf"
    access_log = directory / "access.log"
    site.write_text(
        render(
            {
                "SUSPENSIONS_LISTEN": f"127.0.0.1:{port}",
                "SUSPENSIONS_SERVER_NAME": "127.0.0.1",
                "SUSPENSIONS_UPSTREAM": f"127.0.0.1:{upstream_port}",
                "SUSPENSIONS_UPSTREAM_2": f"127.0.0.1:{second_upstream_port or upstream_port}",
                # The waits' ASGI process: the gunicorn node here, which serves those views too.
                "SUSPENSIONS_ASGI_UPSTREAM": f"127.0.0.1:{upstream_port}",
                "SUSPENSIONS_ACCESS_LOG": str(access_log),
            },
            template,
        )
    )
    conf = directory / "nginx.conf"
    conf.write_text(nginx_conf(directory, site))
    pid = directory / "nginx.pid"
    argv = [nginx_binary(), "-p", str(directory), "-c", str(conf), "-e", "stderr"]
    argv += ["-g", f"daemon off; pid {pid}; error_log stderr;"]
    server = Nginx("nginx", argv, port=port, log=directory / "nginx.log")
    server.access_log = access_log
    try:
        server.wait_until_serving()
    except BaseException:
        server.stop()
        raise
    return server


class Nginx(Server):
    access_log: Path

    def accepted(self) -> int:
        """Client connections nginx's processes hold open on its port (accepted, not merely queued)."""
        processes = [psutil.Process(self.process.pid), *psutil.Process(self.process.pid).children(recursive=True)]
        return sum(
            1
            for proc in processes
            for conn in proc.net_connections(kind="tcp")
            if conn.laddr and conn.laddr.port == self.port and conn.status == psutil.CONN_ESTABLISHED
        )

    def access_line(self, request_id: str, timeout: float) -> str | None:
        """The access line that ends with `id=<request_id>`, waiting up to `timeout` for nginx to write it."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.access_log.read_text() if self.access_log.exists() else ""
            for line in text.splitlines():
                if line.endswith(f" id={request_id}"):
                    return line
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)


class SlowClients:
    """`count` connections to `port` that each send PARTIAL_HEADER and nothing more; all closed on exit."""

    def __init__(self, port: int, count: int) -> None:
        self.port, self.count = port, count
        self.sockets: list[socket.socket] = []
        self.opened = 0.0

    def __enter__(self) -> "SlowClients":
        self.opened = time.monotonic()
        try:
            for _ in range(self.count):
                s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                self.sockets.append(s)
                s.sendall(PARTIAL_HEADER)
                s.setblocking(False)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass

    def still_open(self) -> int:
        """How many the server has neither closed nor answered."""
        open_ = 0
        for s in self.sockets:
            try:
                s.recv(1, socket.MSG_PEEK)
            except BlockingIOError:
                open_ += 1
            except OSError:
                pass
        return open_

    def closed_by_server(self, timeout: float) -> dict[int, float]:
        """Wait up to `timeout` for the server to close each connection: {index: seconds since it was opened}.

        What the server sends before it closes (an error page, say) is read and dropped; the
        connections missing from the result were still open at the deadline.
        """
        started = time.monotonic()
        ended: dict[int, float] = {}
        with selectors.DefaultSelector() as selector:
            for i, s in enumerate(self.sockets):
                selector.register(s, selectors.EVENT_READ, i)
            while len(ended) < len(self.sockets):
                left = started + timeout - time.monotonic()
                if left <= 0:
                    break
                for key, _ in selector.select(left):
                    try:
                        data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        ended[key.data] = time.monotonic() - self.opened
                        selector.unregister(key.fileobj)
        return ended
