"""One kept cursor per PostgreSQL connection for the fixed statements of the hot path.

The hot path (the token lookup, the run lock, the moves and the inserts of
a transition; `services/claims_sql.py`) runs the same few statements on
every request. Through `connection.cursor()` each one pays for a new
psycopg cursor, for psycopg's parse of the `%s` placeholders (cached only
for short statements with few values, which a transition's combined write
is not) and for client-side binding (every value quoted into the text).
Here each database connection keeps a psycopg `RawCursor` per statement,
made once, that takes PostgreSQL's own `$1` placeholders (our `%s` text is numbered
once per distinct statement, below), binds the values on the server and
prepares each statement the first time this connection runs it
(`prepare=True`; PostgreSQL then parses and plans it once per connection,
not per call). psycopg honours `prepare=True` only on a connection with a
`prepare_threshold`, which Django leaves unset (off) by default: the
settings give one that nothing else reaches (`DB_PREPARED_STATEMENTS`).
Until 2026-12-01 they did not, and every fixed statement was parsed and
planned on every call (docs/performance.md, "The fourth pass").

What stays as it was: the statement runs on Django's own connection,
inside Django's transaction, after its health check, with Django's error
translation and broken-transaction guard; whenever something listens (the
query log of DEBUG and `CaptureQueriesContext`, an `execute_wrappers`
entry such as a transition's batch) it goes through Django's whole cursor
wrapper, so they see it as before. When nothing listens, `execute` skips
the wrapper's own frames, and the rows are read from the psycopg cursor
itself (a fetch sends nothing: psycopg holds the whole result), about 1%
of a pause's instructions (docs/performance.md, "The sixth pass"). A new
connection (after a database restart, or another one from the pool) gets
a new cursor and prepares again; prepared statements live and die with
their connection, so nothing needs releasing. Statements other than these fixed ones keep Django's
default (client-side binding, never prepared), which is why the setting
`server_side_binding` is not used.
"""

import functools
import re
from datetime import UTC
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from psycopg import RawCursor  # installed with the project (requirements.in), used only on PostgreSQL
from psycopg import adapters as psycopg_adapters
from psycopg.postgres import types as pg_types
from psycopg.pq import Format

TIMESTAMPTZ = pg_types["timestamptz"].oid
# psycopg's own loader of a timestamptz as text: the compiled one where psycopg's C extension is installed.
COMPILED_TIMES = psycopg_adapters.get_loader(TIMESTAMPTZ, Format.TEXT)


class Sent:
    """A prepared statement's text as Django's query log reads it (`last_executed_query`, `cursor._query.query`).

    psycopg records the query it sends only for a statement it does not
    prepare; without this, DEBUG's log and `CaptureQueriesContext` would show
    a prepared statement as `None`.
    """

    __slots__ = ("query",)

    def __init__(self, text: str) -> None:
        self.query = text.encode()


class PreparingCursor(RawCursor):  # type: ignore[type-arg]
    """`$n` placeholders, server-side binding; each statement prepared on its first run on this connection.

    One kept cursor runs one statement text (`cursor` below), so its `Sent` is made once.
    """

    sent: Sent | None = None

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = True, binary: Any = None) -> Any:
        result = super().execute(query, params, prepare=prepare, binary=binary)
        if self._query is None:
            if self.sent is None:
                self.sent = Sent(query)
            self._query = self.sent  # type: ignore[assignment]
        return result


PLACEHOLDER = re.compile(r"%s")


@functools.lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """`%s` placeholders as `$1`, `$2`, ... (the fixed statements hold no other `%`)."""
    assert "%" not in PLACEHOLDER.sub("", sql), "a literal % in a fixed statement"
    count = iter(range(1, sql.count("%s") + 1))
    return PLACEHOLDER.sub(lambda _: f"${next(count)}", sql)


def db() -> BaseDatabaseWrapper:
    """The default connection itself: the `connection` proxy looks it up again at every attribute."""
    return connections[DEFAULT_DB_ALIAS]


def execute(sql: str, params: list[Any], conn: BaseDatabaseWrapper | None = None) -> Any:
    """Run one fixed statement (`%s` placeholders) on its kept cursor; read its rows from the answer.

    The answer is the psycopg cursor itself: its rows are read without Django's
    wrapper around each fetch (psycopg has the whole result by then; a fetch
    sends nothing). The statement itself goes through Django's wrapper when
    anything is listening (the query log, an execute wrapper such as a
    transition's batch); otherwise only through what that wrapper would do
    for it: the broken-transaction guard and the error translation.
    """
    text = numbered(sql)
    conn = conn or db()
    made, wrapper = kept(text, conn)
    if conn.queries_logged or conn.execute_wrappers:  # the query log, a transition's batch, a test's wrapper
        wrapped(conn, made, wrapper).execute(text, params)
    else:
        conn.validate_no_broken_transaction()
        with conn.wrap_database_errors:
            made.execute(text, params)
    return made


def wrapped(conn: BaseDatabaseWrapper, made: PreparingCursor, wrapper: CursorWrapper) -> CursorWrapper:
    """Django's wrapper of a kept cursor: the debug one that records each statement while queries are logged."""
    return conn.make_debug_cursor(made) if conn.queries_logged else wrapper  # type: ignore[arg-type]


# Kept cursors per connection: past this many distinct statements (a transition's combined writes vary
# with what waits), the connection starts a new set rather than growing without bound.
MAX_KEPT = 256


def cursor(text: str, conn: BaseDatabaseWrapper | None = None) -> CursorWrapper:
    """The kept cursor for `text` in Django's wrapper (the debug one while queries are logged); see `kept`."""
    conn = conn or db()
    return wrapped(conn, *kept(text, conn))


def kept(text: str, conn: BaseDatabaseWrapper) -> tuple[PreparingCursor, CursorWrapper]:
    """The connection's kept cursor for the statement `text` (`$n` placeholders), in Django's wrapper.

    One cursor per statement, not one per connection: psycopg keeps a
    cursor's loaders and dumpers (its `Transformer`) only while the cursor
    runs the same query object again, and builds them anew for every
    column of the answer otherwise, which was a tenth of a statement's CPU
    for the run lock's forty columns. `numbered` hands out one string
    object per statement, so each kept cursor always sees its own.
    PostgreSQL only. Not a context manager to close: it is kept. Read each
    result before the same statement runs again on this connection.
    """
    conn.close_if_health_check_failed()
    conn.ensure_connection()
    raw = conn.connection
    held: tuple[Any, dict[str, tuple[PreparingCursor, CursorWrapper]]] | None = conn.__dict__.get("_kept_cursors")
    if held is None or held[0] is not raw or len(held[1]) >= MAX_KEPT and text not in held[1]:
        held = conn.__dict__["_kept_cursors"] = (raw, {})
    pair = held[1].get(text)
    if pair is None:
        with conn.wrap_database_errors:
            made = PreparingCursor(raw)
            utc_times(made, conn)
        conn.validate_thread_sharing()
        wrapper = conn.make_cursor(made)  # type: ignore[arg-type]  # (the stubs want a wrapper; Django passes the raw cursor)
        pair = held[1][text] = (made, wrapper)  # Django's own wrapper around it, made once too
    return pair


def utc_times(made: PreparingCursor, conn: BaseDatabaseWrapper) -> None:
    """On a UTC connection, the kept cursor reads timestamptz with psycopg's own (compiled) loader.

    Django registers a loader of its own on each connection that reads a
    timestamp with psycopg's Python loader and then sets the connection's
    time zone on it: about 3 us a value against 0.2 us for psycopg's C one,
    and a run's lock row holds several. When the session's TimeZone is UTC
    and so is Django's (USE_TZ, as the settings have it), psycopg's loader
    gives the very same value (aware, `datetime.timezone.utc`), so the kept
    cursors use it; on any other zone they keep Django's.
    tests/services/test_claims_batch.py holds the two to the same values.
    """
    if COMPILED_TIMES is None or conn.timezone is not UTC:
        return
    if made.connection.pgconn.parameter_status(b"TimeZone") == b"UTC":
        made.adapters.register_loader(TIMESTAMPTZ, COMPILED_TIMES)
