"""One kept cursor per PostgreSQL connection for the fixed statements of the hot path.

The hot path (the token lookup, the run lock, the moves and the inserts of
a transition; `services/claims_sql.py`) runs the same few statements on
every request. Through `connection.cursor()` each one pays for a new
psycopg cursor, for psycopg's parse of the `%s` placeholders (cached only
for short statements with few values, which a transition's combined write
is not) and for client-side binding (every value quoted into the text).
Here each database connection keeps one psycopg `RawCursor`, made once,
that takes PostgreSQL's own `$1` placeholders (our `%s` text is numbered
once per distinct statement, below), binds the values on the server and
prepares each statement the first time this connection runs it
(`prepare=True`; PostgreSQL then parses and plans it once per connection,
not per call).

What stays as it was: the statement goes through Django's cursor wrapper
(its error translation, `execute_wrappers`, the query log of
`CaptureQueriesContext`), on Django's own connection, inside Django's
transaction, after its health check. A new connection (after a database
restart, or another one from the pool) gets a new cursor and prepares
again; prepared statements live and die with their connection, so nothing
needs releasing. Statements other than these fixed ones keep Django's
default (client-side binding, never prepared), which is why the setting
`server_side_binding` is not used.
"""

import functools
import re
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from psycopg import RawCursor  # installed with the project (requirements.in), used only on PostgreSQL


class PreparingCursor(RawCursor):  # type: ignore[type-arg]
    """`$n` placeholders, server-side binding; each statement prepared on its first run on this connection."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = True, binary: Any = None) -> Any:
        return super().execute(query, params, prepare=prepare, binary=binary)


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


def execute(sql: str, params: list[Any], conn: BaseDatabaseWrapper | None = None) -> CursorWrapper:
    """Run one fixed statement (`%s` placeholders) on the kept cursor; read its rows from the answer."""
    kept = cursor(conn)
    kept.execute(numbered(sql), params)
    return kept


def cursor(conn: BaseDatabaseWrapper | None = None) -> CursorWrapper:
    """The connection's kept cursor, in Django's wrapper. Not a context manager to close: it is kept.

    PostgreSQL only. Read each result before the next statement on the same
    cursor (the next `execute` discards what was not fetched).
    """
    conn = conn or db()
    conn.close_if_health_check_failed()
    conn.ensure_connection()
    raw = conn.connection
    kept = conn.__dict__.get("_kept_cursor")
    if kept is None or kept[0] is not raw:
        with conn.wrap_database_errors:
            cursor = PreparingCursor(raw)
        conn.validate_thread_sharing()
        wrapper = conn.make_cursor(cursor)  # type: ignore[arg-type]  # (the stubs want a wrapper; Django passes the raw cursor)
        kept = (raw, cursor, wrapper)  # Django's own wrapper around it, made once too
        conn.__dict__["_kept_cursor"] = kept
    if conn.queries_logged:  # DEBUG or CaptureQueriesContext: the wrapper that records each statement
        return conn.make_debug_cursor(kept[1])  # type: ignore[arg-type]
    return kept[2]  # type: ignore[no-any-return]
