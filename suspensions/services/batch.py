"""A transition's fixed writes kept and sent to PostgreSQL together, as one statement (see Batch).

`claims_sql.transition()` opens the batch; `claims_sql`'s writes go
through `write` (kept) and `send` (sent now, with what is kept).
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from .. import fixedsql

if TYPE_CHECKING:
    from .attempts import Attempt

KeySetter = Callable[[list[Any]], None]


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

    def __init__(self, conn: BaseDatabaseWrapper, *, attempt: "Attempt | None" = None) -> None:
        self.conn = conn
        self.waiting: list[tuple[str, str, list[Any]]] = []  # (table, sql, params)
        # An attempt's batch (attempts.attempted): no transaction around it, so every write goes in ONE statement.
        self.attempt = attempt
        # An attempt's one INSERT whose keys are read back: (its place in `waiting`, its key column, what sets them).
        self.keyed: tuple[int, str, KeySetter] | None = None

    def add(self, table: str, sql: str, params: list[Any]) -> None:
        self.make_room(table)
        self.waiting.append((table, sql, params))

    def add_keyed(self, table: str, sql: str, params: list[Any], key: str, set_keys: KeySetter) -> None:
        """An attempt's INSERT ... RETURNING `key`: it waits with the rest; `set_keys` gets its keys when it lands."""
        if self.keyed is not None:
            raise Unbatched("an attempt reads back the keys of one write")
        self.add(table, sql, params)
        self.keyed = (len(self.waiting) - 1, key, set_keys)

    def make_room(self, table: str) -> None:
        """A statement on `table` is next: a write of that table that waits goes first (one snapshot, see above)."""
        if any(t == table for t, _, _ in self.waiting):
            self.send()

    def send(self, last: tuple[str, list[Any]] | None = None) -> CursorWrapper | None:
        """The waiting writes, with `last` (sql, params) as the statement they precede, if any."""
        if self.attempt is not None:
            raise Unbatched("an attempt sends its writes once, under its guard")
        return self._send(last)

    def _send(self, last: tuple[str, list[Any]] | None = None) -> CursorWrapper | None:
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

    def send_guarded(self, guard: str | None, params: list[Any]) -> None:
        """An attempt's writes in ONE statement, behind `guard` (a CTE named g) if any; none if it finds no row.

        `guard` locks the row it checks, so it is run first: the last part of
        the statement reads it (and the keyed INSERT's keys, after it), and
        PostgreSQL runs the writes that nothing reads after that part. When it
        finds no row, the last part fails with MOVED before any write has
        run, and the statement, its own transaction, changes nothing. Without
        a guard the writes go as `send` sends them.
        """
        if guard is None:
            if self.keyed is not None:
                raise Unbatched("keys are read back behind a guard only")
            self._send()
            return
        waiting, self.waiting = self.waiting, []
        ctes = ", ".join([f"g AS ({guard})", *(f"w{n} AS ({w[1]})" for n, w in enumerate(waiting))])
        checked = f"SELECT CAST(COALESCE((SELECT '1' FROM g), '{MOVED}') AS integer)"
        if self.keyed is None:
            sql = f"WITH {ctes} {checked}"
        else:
            # The check is read (an output no one reads is dropped, and with it the guard) and fenced
            # (OFFSET 0: the check's row is made before the keys are read, so the guard runs first).
            n, key, _ = self.keyed
            keys = f"SELECT array_agg(w{n}.{key} ORDER BY w{n}.{key}) FROM w{n}"
            sql = f"WITH {ctes} SELECT g1.ok, ({keys}) FROM ({checked} AS ok OFFSET 0) AS g1"
        cursor = fixedsql.execute(sql, params + [p for w in waiting for p in w[2]], self.conn)
        if self.keyed is not None:
            self.keyed[2](cursor.fetchone()[1])  # serial keys, in the order of the rows' VALUES

    def before_statement(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        """Django's execute wrapper: another statement first sends the waiting writes.

        In an attempt, a read goes as it is while nothing waits; a write, or
        a read after a write, is refused (Unbatched) before it is sent.
        """
        if self.attempt is not None and (self.waiting or not is_read(sql)):
            raise Unbatched("an attempt reads before it writes, and writes once")
        if self.waiting:
            self.send()
        return execute(sql, params, many, context)


class Unbatched(Exception):
    """An attempt met a statement it cannot send in its one guarded statement: the transition takes the lock."""


# The guard found no row: the run moved after it was read. PostgreSQL's log shows this text in its error.
MOVED = "suspensions: the run moved after it was read; the claim is taken again under the lock"


def is_read(sql: str) -> bool:
    """A statement an attempt may send before its writes: a plain SELECT (no lock; anything with FOR is refused)."""
    return sql.startswith("SELECT ") and " FOR " not in sql


BATCH = "_fixed_write_batch"


@contextmanager
def batched(conn: BaseDatabaseWrapper, *, attempt: "Attempt | None" = None) -> Iterator[Batch]:
    """The connection's batch for the block: sent at its end, before COMMIT; nothing sent when it raises.

    `attempt`: an attempt's batch, which the block sends itself (`send_guarded`).
    """
    batch = conn.__dict__[BATCH] = Batch(conn, attempt=attempt)
    try:
        with conn.execute_wrapper(batch.before_statement):
            yield batch
            if attempt is None and not conn.needs_rollback:  # set_rollback(True): ends quietly, as atomic's does
                batch.send()
    finally:
        del conn.__dict__[BATCH]


def attempt_of(conn: BaseDatabaseWrapper) -> "Attempt | None":
    """The attempt open on the connection (its batch holds it), if any."""
    batch: Batch | None = conn.__dict__.get(BATCH)
    return batch.attempt if batch is not None else None


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
