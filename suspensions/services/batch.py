"""A transition's fixed writes kept and sent to PostgreSQL together, as one statement (see Batch).

`claims_sql.transition()` opens the batch; `claims_sql`'s writes go
through `write` (kept) and `send` (sent now, with what is kept).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from .. import fixedsql


class Batch:
    """The writes of one transition that wait to go to PostgreSQL together, as ONE statement.

    Inside `transition()` an UPDATE, DELETE or INSERT that returns nothing
    is kept here instead of being sent, and sent with the next statement
    that must go anyway: `WITH w0 AS (write), w1 AS (write) <statement>`.
    PostgreSQL runs every part of such a statement to completion, in one
    snapshot, whether or not the last part reads them: so each part sees the
    rows as they were before the statement, and the batch never holds two
    writes of the same table (a second one sends the first before it waits).
    The writes of different tables cannot see each other anyway: foreign
    keys are checked at commit (Django creates them DEFERRABLE INITIALLY
    DEFERRED) and these tables have no triggers. Any other statement on the
    connection (a read, the ORM, an INSERT that returns its keys) sends the
    waiting writes first, with it or just before it, so nothing ever reads
    around a write it should see; the end of `transition()` sends the rest
    before COMMIT. A refusal raised while writes wait sends nothing.
    """

    def __init__(self, conn: BaseDatabaseWrapper) -> None:
        self.conn = conn
        self.waiting: list[tuple[str, str, list[Any]]] = []  # (table, sql, params)

    def add(self, table: str, sql: str, params: list[Any]) -> None:
        self.make_room(table)
        self.waiting.append((table, sql, params))

    def make_room(self, table: str) -> None:
        """A statement on `table` is next: a write of that table that waits goes first (one snapshot, see above)."""
        if any(t == table for t, _, _ in self.waiting):
            self.send()

    def send(self, last: tuple[str, list[Any]] | None = None) -> CursorWrapper | None:
        """The waiting writes, with `last` (sql, params) as the statement they precede, if any."""
        waiting, self.waiting = self.waiting, []
        if last is None:
            if not waiting:
                return None
            _, *last = waiting.pop()  # type: ignore[assignment]
        sql, params = last  # type: ignore[misc]
        if waiting:
            sql = "WITH " + ", ".join(f"w{n} AS ({w[1]})" for n, w in enumerate(waiting)) + " " + sql
            params = [p for w in waiting for p in w[2]] + params
        return fixedsql.execute(sql, params, self.conn)

    def before_statement(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        """Django's execute wrapper: another statement first sends the waiting writes."""
        if self.waiting:
            self.send()
        return execute(sql, params, many, context)


BATCH = "_fixed_write_batch"


@contextmanager
def batched(conn: BaseDatabaseWrapper) -> Iterator[None]:
    """The connection's batch for the block: sent at its end, before COMMIT; nothing sent when it raises."""
    batch = conn.__dict__[BATCH] = Batch(conn)
    try:
        with conn.execute_wrapper(batch.before_statement):
            yield
            if not conn.needs_rollback:  # set_rollback(True): the block ends quietly, as atomic's does
                batch.send()
    finally:
        del conn.__dict__[BATCH]


def write(conn: BaseDatabaseWrapper, table: str, sql: str, params: list[Any]) -> None:
    """A write that returns nothing: kept for later inside a transition, sent now outside one."""
    batch = conn.__dict__.get(BATCH)
    if batch is not None:
        batch.add(table, sql, params)
    else:
        fixedsql.execute(sql, params, conn)


def send(conn: BaseDatabaseWrapper, table: str, sql: str, params: list[Any]) -> CursorWrapper:
    """A statement whose result is read: sent now, with the writes that wait."""
    batch = conn.__dict__.get(BATCH)
    if batch is not None:
        batch.make_room(table)
        return batch.send((sql, params))  # type: ignore[return-value]
    return fixedsql.execute(sql, params, conn)
