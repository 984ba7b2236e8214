"""PgBouncer in transaction pooling mode, started for real in front of a test's database (docs/deploy.md, "PgBouncer").

Debian's `pgbouncer` (`make pgbouncer`) runs in the foreground with an ini and a userlist of
its own in a temporary directory, on a free port of 127.0.0.1; the package's own service and
port 6432 play no part. Its log (its stdout) goes to a file the caller names.
"""

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from tests.front_door import free_port

START_SECONDS = 30

INI = """\
[databases]
{name} = host={host} port={port} dbname={name}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen_port}
; No Unix socket: the test connects over TCP only, and /var/run/postgresql may be the package's.
unix_socket_dir =
; The machine's PostgreSQL trusts 127.0.0.1, and so does this PgBouncer: no passwords to carry.
auth_type = trust
auth_file = {directory}/userlist.txt
admin_users = {user}
pool_mode = transaction
; Fewer server connections than the web workers' pooled client connections: they must share.
default_pool_size = {pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 200
; Idle server connections handed out oldest first, not last-used first: a client's next transaction
; lands on another server connection whenever one is idle, so session state the service relied on
; would be missing at once, not now and then under load.
server_round_robin = 1
; A request that cannot get a server connection fails within gunicorn's timeout instead of hanging.
query_wait_timeout = 20
"""


def binary() -> str:
    found = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if os.access("/usr/sbin/pgbouncer", os.X_OK) else None)
    if found is None:
        raise RuntimeError("pgbouncer is not installed: `make pgbouncer` installs Debian's package")
    return found


@dataclass
class PgBouncer:
    process: subprocess.Popen[bytes]
    directory: Path
    port: int
    database: str
    user: str
    pool_size: int
    log: Path

    def url(self) -> str:
        """DATABASE_URL of the test database through PgBouncer."""
        return f"postgres://{quote(self.user, safe='')}@127.0.0.1:{self.port}/{self.database}"

    def show(self, what: str) -> list[dict[str, Any]]:
        """Rows of the admin console's `SHOW <what>` (it speaks the simple query protocol only, hence exec_)."""
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.user, dbname="pgbouncer", autocommit=True
        ) as c:
            result = c.pgconn.exec_(f"SHOW {what}".encode())
            names = [result.fname(i).decode() for i in range(result.nfields)]  # type: ignore[union-attr]
            return [
                {n: (v.decode() if (v := result.get_value(r, i)) is not None else None) for i, n in enumerate(names)}
                for r in range(result.ntuples)
            ]

    def connections(self, kind: str) -> int:
        """How many client (`CLIENTS`) or server (`SERVERS`) connections PgBouncer holds for the test database."""
        return sum(1 for row in self.show(kind) if row["database"] == self.database)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def unprivileged_user() -> str:
    """Who PgBouncer runs as when the tests run as root: postgres where Debian's server made that user."""
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "nobody"
    return "postgres"


def write_config(directory: Path, settings_dict: dict[str, Any], listen_port: int, pool_size: int) -> Path:
    db = settings_dict
    user = db["USER"]
    values = {"name": db["NAME"], "host": db["HOST"] or "127.0.0.1", "port": db["PORT"] or 5432, "user": user}
    ini = directory / "pgbouncer.ini"
    ini.write_text(INI.format(directory=directory, listen_port=listen_port, pool_size=pool_size, **values))
    (directory / "userlist.txt").write_text(f'"{user}" ""\n')
    for path in (ini, directory / "userlist.txt"):
        path.chmod(0o644)
    return ini


def start(settings_dict: dict[str, Any], *, pool_size: int, log: Path) -> PgBouncer:
    """PgBouncer in front of the database of `settings_dict` (a Django connection's), serving once this returns."""
    # PgBouncer refuses to run as root; as root it runs as another user, who must be able to read its files.
    directory = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    directory.chmod(0o755)
    port = free_port()
    ini = write_config(directory, settings_dict, port, pool_size)
    argv = [binary(), *(["-u", unprivileged_user()] if os.geteuid() == 0 else []), str(ini)]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    bouncer = PgBouncer(process, directory, port, settings_dict["NAME"], settings_dict["USER"], pool_size, log)
    try:
        wait_until_serving(bouncer)
    except BaseException:
        bouncer.stop()
        raise
    return bouncer


def wait_until_serving(bouncer: PgBouncer) -> None:
    """Until a query through PgBouncer reaches the database; RuntimeError with its log if it exits or never does."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if bouncer.process.poll() is not None:
            raise RuntimeError(f"pgbouncer exited with {bouncer.process.returncode}:\n{bouncer.log.read_text()}")
        try:
            with psycopg.connect(bouncer.url().replace("postgres://", "postgresql://"), connect_timeout=2) as c:
                c.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            time.sleep(0.1)
    raise RuntimeError(f"pgbouncer did not serve within {START_SECONDS} s:\n{bouncer.log.read_text()}")
