"""Django's PostgreSQL backend (`ENGINE = "suspensions.postgresql"`, set by the settings), one change: the pool check.

With `CONN_HEALTH_CHECKS`, Django has psycopg_pool check every connection it
hands out with `ConnectionPool.check_connection`: an empty query, one round
trip to PostgreSQL at the start of every request, which PostgreSQL answers
too (counted by bench/resume.py's proxy as "pool checks"). The check is
what lets the service live through a database restart without a restart of
its own: a connection the server closed is thrown away at checkout and
replaced, instead of failing the request that draws it.

A connection the server closes does not go quiet: PostgreSQL sends its
termination notice (a restart, `pg_terminate_backend`, an idle timeout) and
closes the socket, and the kernel reports the socket readable from then on.
A connection idle in the pool has nothing to read otherwise, since every
answer to it was read in full. So `check_quietly` polls the socket without
waiting: nothing to read, and libpq still says the connection is fine, is a
connection the server has not closed, handed out without a round trip;
anything to read (the notice, the end of the stream, an asynchronous
message) gets psycopg_pool's own check, which reads it and answers.

What it cannot see is a server that vanished without closing anything (a
host switched off, a network cut): the socket stays quiet, and the request
that draws the connection fails with a 503 while the pool replaces it. The
empty query would have waited for TCP's timeout in that case too.
"""

import select
from typing import Any

import psycopg
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool


def readable(fd: int) -> bool:
    """Whether the socket has something to read now (poll, not select: descriptors past 1024 too)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def check_quietly(conn: psycopg.Connection[Any]) -> None:
    """psycopg_pool's check, made only when the socket has something to say; raises for a dead connection."""
    if conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    if conn.pgconn.status == psycopg.pq.ConnStatus.OK and not readable(conn.pgconn.socket):
        return
    ConnectionPool.check_connection(conn)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> ConnectionPool[Any] | None:
        pools = self._connection_pools  # type: ignore[attr-defined]  # (Django 5.1's; the stubs predate it)
        if self.alias in pools:
            return pools[self.alias]  # type: ignore[no-any-return]
        pool: ConnectionPool[Any] | None = super().pool  # type: ignore[misc]
        if pool is not None and pool._check is ConnectionPool.check_connection:  # CONN_HEALTH_CHECKS
            pool._check = check_quietly
        return pool
