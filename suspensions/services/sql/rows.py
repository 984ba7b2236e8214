"""The run lock and a transition's rows, as SQL built from the models' _meta (services/claims.py, the doors)."""

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models.fields import AutoFieldMixin

from ... import audit, scopes
from ...models import Admission, Event, Run, Suspension

RUN, SUSPENSION, EVENT = Run._meta.db_table, Suspension._meta.db_table, Event._meta.db_table


def _db() -> Any:
    """This thread's database connection itself. `django.db.connection` is a proxy that finds it again on every
    attribute read, and a field's get_db_prep_save reads the connection several times: a transition's
    rows hold some 50 values, so the writes below resolve it once (docs/performance.md, "Where the time goes")."""
    return connections[DEFAULT_DB_ALIAS]


# -- a transition's own rows (services/claims.py and the doors) ---------------------------------
#
# The run lock and the writes of every transition, built from the models' _meta (tables, columns,
# field order: a field added to a model is written and read here by itself, with no list to keep).
# Values go through each field's pre_save and get_db_prep_save, as the ORM's own INSERT and UPDATE;
# the statements run on Django's cursor, inside Django's transaction. The ORM compiles the same
# statements anew on every call: docs/performance.md, "Where the time goes", has what this buys.


def _quoted(model: type[Model], alias: str) -> str:
    return ", ".join(f'{alias}."{f.column}"' for f in model._meta.concrete_fields)


@functools.cache
def _plain(model: type[Model]) -> list[str]:
    """The attribute names of a model read with from_db: only fields whose values need no converting."""
    assert not any(hasattr(f, "from_db_value") for f in model._meta.concrete_fields), f"{model} needs converters"
    return [f.attname for f in model._meta.concrete_fields]


RUN_NAMES, PAUSE_NAMES = _plain(Run), _plain(Suspension)
PAUSE_PK = [f.primary_key for f in Suspension._meta.concrete_fields].index(True)
_LOCK_RUN = (
    f"SELECT {_quoted(Run, 'r')}, CLOCK_TIMESTAMP(), {_quoted(Suspension, 's')} "
    f"FROM {RUN} r LEFT OUTER JOIN {SUSPENSION} s ON s.run_id = r.id "
    "WHERE r.id = {target} {visible} FOR NO KEY UPDATE OF r"
)
# The run of an admission, named in the lock's own statement (a start knows its admission, not its run):
# an admission's run_id is written once, so reading it there is the same as reading it first.
_RUN_OF_ADMISSION = f'(SELECT a."run_id" FROM {Admission._meta.db_table} a WHERE a."id" = %s)'


def select_locked_run(
    run_id: Any, held: Sequence[str] | None, *, admission_id: Any = None
) -> tuple[Run, Suspension | None, datetime] | None:
    """The run `run_id` locked FOR NO KEY UPDATE, its live pause and the clock; None when not visible.

    `held`: the scopes whose rows the caller may see (None: every scope, a superuser's). With
    `admission_id` (and `run_id` None), the run of that admission.
    """
    if admission_id is None:
        target, key = "%s", Run._meta.pk.to_python(run_id)  # type: ignore[union-attr]
    else:
        target, key = _RUN_OF_ADMISSION, Admission._meta.pk.to_python(admission_id)  # type: ignore[union-attr]
    params: list[Any] = [key]
    visible = ""
    if held is not None:
        visible = "AND (" + " OR ".join(f"r.scope_l{scopes.depth(h)} = %s" for h in held) + ")"
        params += list(held)
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_RUN.format(target=target, visible=visible), params)
        row = cursor.fetchone()
    if row is None:
        return None
    run = Run.from_db(connection.alias, RUN_NAMES, row[: len(RUN_NAMES)])
    values = row[len(RUN_NAMES) + 1 :]
    live = Suspension.from_db(connection.alias, PAUSE_NAMES, values) if values[PAUSE_PK] is not None else None
    run._state.fields_cache["suspension"] = live  # run.suspension answers without a query, as select_related
    return run, live, row[len(RUN_NAMES)]


M = TypeVar("M", bound=Model)


def select_row(
    model: type[M], where: Mapping[str, Any], *, flag: tuple[str, type[Model], str] | None = None
) -> M | None:
    """The row of `model` whose fields equal `where` (a key: one row or none), read with from_db.

    `flag` = (name, other, field): whether a row of `other` has `field` equal to this row's key, read in
    the same statement and set on the row as the attribute `name` (the ORM's `annotate(name=Exists(...))`).
    For a door's reads after the lock (a decision's approval, a start's admission): the ORM compiles the
    same statement anew on every call, most of what such a read costs (docs/performance.md, "Where the time goes").
    """
    meta = model._meta
    names, field_of = _plain(model), meta.get_field
    exists = ""
    if flag is not None:
        _, other, column = flag
        inner = f'SELECT 1 FROM {other._meta.db_table} o WHERE o."{other._meta.get_field(column).column}"'  # type: ignore[union-attr]
        exists = f', EXISTS ({inner} = t."{meta.pk.column}")'  # type: ignore[union-attr]
    match = " AND ".join(f't."{field_of(n).column}" = %s' for n in where)  # type: ignore[union-attr]
    db = _db()
    params = [field_of(n).get_db_prep_value(v, db, prepared=False) for n, v in where.items()]  # type: ignore[union-attr]
    with db.cursor() as cursor:
        cursor.execute(f"SELECT {_quoted(model, 't')}{exists} FROM {meta.db_table} t WHERE {match}", params)
        row = cursor.fetchone()
    if row is None:
        return None
    found = model.from_db(db.alias, names, row[: len(names)])
    if flag is not None:
        setattr(found, flag[0], row[len(names)])
    return found


# -- the audit chain (docs/auditors.md, "What is recorded") ----------------------------------------
#
# An event's hash covers its id, which PostgreSQL generates, so the database finishes what Python
# begins: Python writes the event's canonical text in two pieces around the id (audit.pieces), and
# the function suspensions_chain_events (migration 0017) draws the id, reads the run's previous hash
# and hashes, then inserts the row, for each event in order, in the statement that calls it. The
# previous hash is the run's newest event by id: every event of a run is written under the run's
# lock (a new run's first event by the transaction that creates it), so its ids grow in commit
# order and the read sees the one before; the event_timeline index (run_id, id) serves it. Each
# event is an INSERT of its own inside the function, so one call chains several events of a run.
# `Writes.insert_events` (a transition's events) and the sweep (services/sql/expiry.py, one event
# per run) both call it with `chain_params`: the chain lives in that one function. It is PL/pgSQL
# because PostgreSQL keeps the plans of a function's statements per connection, where a chained
# INSERT sent as text (client-side binding, no prepared statements: PgBouncer) was planned anew for
# every event, most of what the chain cost (docs/benchmarks.md, "Audit chain").
#
# The function names no column list: `chain_params` sends every concrete field of Event by column
# name and the function inserts the whole row, so a field added to Event needs no change here or
# there. To change the function itself: a new migration (CREATE OR REPLACE FUNCTION, its reverse the
# old definition) and the call below; tests/services/test_sql.py reads it back from PostgreSQL.

CHAIN_EVENTS = "suspensions_chain_events"
CHAIN_CALL = f"{CHAIN_EVENTS}(%s::jsonb)"
# The identity sequence of event.id, named in the function (tests/audit/test_chain.py holds it to
# pg_get_serial_sequence, tests/services/test_sql.py to the function's definition).
EVENT_SEQUENCE = f"{EVENT}_id_seq"


def _jsonable(value: Any) -> Any:
    """A column's value as jsonb_populate_record reads it: uuids and times as their text, the rest as itself."""
    return str(value) if isinstance(value, UUID | datetime) else value


def chain_params(rows: Sequence[Event]) -> list[Any]:
    """The parameter of `CHAIN_CALL` for these events, in order: each whole row by column name, and its pieces.

    Values go through each field's pre_save and get_prep_value: the Python value the ORM would adapt
    (a JSONField's as itself, not psycopg's wrapper of it).
    """
    fields = Event._meta.concrete_fields
    items = []
    for row in rows:
        before, after = audit.pieces({k: getattr(row, k) for k in audit.HEAD_KEYS + audit.TAIL_KEYS})
        whole = {f.column: _jsonable(f.get_prep_value(f.pre_save(row, True))) for f in fields}
        items.append({"row": whole, "before": before, "after": after})
    return [json.dumps(items, separators=(",", ":"))]


Done = Callable[[Any], None]  # what a write does with its cursor once sent (keys read back, the row count checked)


@dataclass
class Writes:
    """A transition's writes, kept in order and sent to PostgreSQL in ONE round trip by `send`.

    Every door of the claim path writes through the `writes` of its locked
    run (claims.Locked), and claiming.through sends them after the door's
    `write` returns, before the commit; a door that must read a generated key
    first (a closure's receipt names its event) calls `send` itself. Reads
    never wait here: they go at once, as always. Django's psycopg cursors bind
    parameters on the client, so one execute carries several statements (as
    the sweep's batch does) and each statement's result is read in turn.
    """

    waiting: list[tuple[str, list[Any], Done | None]] = field(default_factory=list)

    def insert(self, rows: Sequence[Model]) -> None:
        """New rows of one model in ONE statement; a key the database generates is set on each row when sent."""
        if not rows:
            return
        model = type(rows[0])
        fields = [f for f in model._meta.concrete_fields if not isinstance(f, AutoFieldMixin)]
        one = "(" + ", ".join(["%s"] * len(fields)) + ")"
        columns = ", ".join(f'"{f.column}"' for f in fields)
        text = f"INSERT INTO {model._meta.db_table} ({columns}) VALUES " + ", ".join([one] * len(rows))
        db = _db()
        params = [f.get_db_prep_save(f.pre_save(row, True), db) for row in rows for f in fields]
        for row in rows:
            row._state.adding, row._state.db = False, db.alias
        pk = model._meta.auto_field  # the primary key when the database generates it, else None
        if pk is None:
            self.waiting.append((text, params, None))
            return

        def keys(cursor: Any) -> None:
            for row, (key,) in zip(rows, cursor.fetchall(), strict=True):
                setattr(row, pk.attname, key)

        self.waiting.append((f'{text} RETURNING "{pk.column}"', params, keys))

    def insert_events(self, rows: Sequence[Event]) -> None:
        """New events, chained in order by ONE call of `CHAIN_EVENTS`; sets id and hashes on each when sent."""
        if not rows:
            return
        db = _db()
        for row in rows:
            row._state.adding, row._state.db = False, db.alias

        def chained(cursor: Any) -> None:
            for row, (key, prev_hash, hash_) in zip(rows, cursor.fetchall(), strict=True):
                row.id, row.prev_hash, row.hash = key, prev_hash, hash_

        self.waiting.append((f"SELECT id, prev_hash, hash FROM {CHAIN_CALL}", chain_params(rows), chained))

    def update(self, model: type[Model], where: dict[str, Any], done: Done | None = None, **values: Any) -> None:
        """One UPDATE of some columns of the rows whose columns equal `where`; `done` gets the cursor (rowcount)."""
        field_of, db = model._meta.get_field, _db()
        sets = ", ".join(f'"{field_of(n).column}" = %s' for n in values)  # type: ignore[union-attr]
        match = " AND ".join(f'"{field_of(n).column}" = %s' for n in where)  # type: ignore[union-attr]
        params = [field_of(n).get_db_prep_save(v, db) for n, v in values.items()]  # type: ignore[union-attr]
        params += [field_of(n).get_db_prep_save(v, db) for n, v in where.items()]  # type: ignore[union-attr]
        self.waiting.append((f"UPDATE {model._meta.db_table} SET {sets} WHERE {match}", params, done))

    def delete(self, model: type[Model], pk: Any) -> None:
        """One DELETE by key, without the ORM's collection of related rows (evidence rows keep plain ids)."""
        self.waiting.append((f'DELETE FROM {model._meta.db_table} WHERE "{model._meta.pk.column}" = %s', [pk], None))  # type: ignore[union-attr]

    def send(self) -> None:
        """Everything waiting, in order, in one execute; each statement's `done` reads its own result."""
        if not self.waiting:
            return
        sent, self.waiting = self.waiting, []
        with connection.cursor() as cursor:
            cursor.execute("; ".join(text for text, _, _ in sent), [p for _, params, _ in sent for p in params])
            for i, (_, _, done) in enumerate(sent):
                if i:
                    cursor.cursor.nextset()  # Django's wrapper has no nextset: psycopg's own cursor
                if done is not None:
                    done(cursor)
