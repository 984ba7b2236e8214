"""The pool's health check (suspensions/postgresql/base.py): no round trip while quiet; a closed connection replaced.

Against the real PostgreSQL: what the server last ran on a connection is read
back from pg_stat_activity, so a check that sends nothing leaves it as it
was, and psycopg_pool's own check (an empty query) does not. The server
closes connections with pg_terminate_backend, as it does at a restart.
"""

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection

from suspensions.postgresql.base import check_quietly, readable
from tests.processes import database_url, wait_for

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="the pool is PostgreSQL's")


def last_query(observer: psycopg.Connection[Any], pid: int) -> str:
    row = observer.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
    assert row is not None
    return str(row[0])


@pytest.fixture
def pair(transactional_db: None) -> Iterator[tuple[psycopg.Connection[Any], psycopg.Connection[Any]]]:
    """A connection as the pool holds it (idle, autocommit off as Django's are) and another to watch it from."""
    url = database_url()
    held = psycopg.connect(url)
    observer = psycopg.connect(url, autocommit=True)
    try:
        yield held, observer
    finally:
        held.close()
        observer.close()


def test_a_quiet_connection_is_checked_without_a_round_trip(pair: tuple[psycopg.Connection[Any], ...]) -> None:
    held, observer = pair
    held.execute("SELECT 1 AS marker")
    held.rollback()
    assert last_query(observer, held.info.backend_pid) == "ROLLBACK"
    check_quietly(held)
    assert last_query(observer, held.info.backend_pid) == "ROLLBACK"  # nothing reached the server
    from psycopg_pool import ConnectionPool

    ConnectionPool.check_connection(held)  # psycopg_pool's own check: an empty query
    assert last_query(observer, held.info.backend_pid) == ""


def test_a_connection_the_server_closed_fails_the_check(pair: tuple[psycopg.Connection[Any], ...]) -> None:
    held, observer = pair
    fd = held.pgconn.socket
    assert not readable(fd)
    observer.execute("SELECT pg_terminate_backend(%s)", [held.info.backend_pid])
    wait_for(lambda: readable(fd), "the termination notice to arrive")
    with pytest.raises(psycopg.OperationalError):
        check_quietly(held)


@pytest.mark.slow
def test_gunicorn_answers_the_first_request_after_its_connections_were_closed(
    transactional_db: None, token: Any
) -> None:
    """No request fails for a connection the server closed while it sat in the pool (a restart does the same)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from common import Client, Gunicorn

    name = f"pool-check-{time.monotonic_ns()}"  # libpq's PGAPPNAME: gunicorn's connections carry it
    secret = token("acme", ["engine"])
    observer = psycopg.connect(database_url(), autocommit=True)

    def pids() -> list[int]:
        query = "SELECT pid FROM pg_stat_activity WHERE application_name = %s"
        return [row[0] for row in observer.execute(query, [name])]

    try:
        env = {"DB_POOL_MIN": "2", "DB_POOL_MAX": "2", "PGAPPNAME": name}
        with Gunicorn(database_url(), workers=1, threads=2, env=env, quiet=True) as web:
            caller = Client(web.port, secret)
            statuses = [caller.call("POST", "/api/v1/runs", {"agent_id": "a"})[0]]
            wait_for(lambda: len(pids()) == 2, "the pool's two connections")
            closed = pids()
            for pid in closed:
                observer.execute("SELECT pg_terminate_backend(%s)", [pid])
            wait_for(lambda: not set(closed) & set(pids()), "the closed connections to end")
            statuses += [caller.call("POST", "/api/v1/runs", {"agent_id": "a"})[0] for _ in range(4)]
            caller.close()
            assert web.process.poll() is None
    finally:
        observer.close()
    assert statuses == [201] * 5
