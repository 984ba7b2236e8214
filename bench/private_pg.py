"""A private, throw-away PostgreSQL server for tests and benchmarks that stop it or need many connections.

The shared server on 5432 is used by everyone else on the machine and is
never stopped or restarted; this one lives in a temporary directory, on its
own port, and is removed by `close()`.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: install the PostgreSQL server package")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivatePostgres:
    """initdb + pg_ctl in a temporary directory; runs as the postgres user when we are root."""

    def __init__(self, *, port: int | None = None, settings: dict[str, str] | None = None) -> None:
        self.port = port or _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="suspensions-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.settings = {"listen_addresses": "127.0.0.1", "fsync": "off", "max_connections": "200", **(settings or {})}
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self._run(_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self.start()

    @classmethod
    def replica_of(cls, primary: "PrivatePostgres") -> "PrivatePostgres":
        """A streaming replica of `primary` (pg_basebackup -R: it follows the primary's WAL), started hot standby on
        a port of its own. initdb's trust rules already let 127.0.0.1 connect for replication."""
        self = cls.__new__(cls)
        self.port = _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="suspensions-pg-replica-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.settings = {**primary.settings, "hot_standby": "on"}
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self._run(
            _bin("pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
            "-D", str(self.data), "-R", "-X", "stream", "-c", "fast", "--no-sync",
        )  # fmt: skip
        self.start()
        return self

    def _run(self, *argv: str) -> None:
        command = list(argv)
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.dir)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} " + " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """mode `immediate` is a crash: no shutdown checkpoint, recovery from WAL at the next start."""
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def createdb(self, dbname: str) -> str:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True
        ) as c:
            c.execute(f'CREATE DATABASE "{dbname}"')
        return self.url(dbname)

    def is_up(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def close(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        deadline = time.monotonic() + 10
        while self.is_up() and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "PrivatePostgres":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
