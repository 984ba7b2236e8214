"""The run lock and a transition's rows, as SQL built from the models' _meta (services/claims.py, the doors)."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models.fields import AutoFieldMixin

from ... import audit, scopes
from ...models import Event, Run, Suspension

RUN, SUSPENSION, EVENT = Run._meta.db_table, Suspension._meta.db_table, Event._meta.db_table


def _db() -> Any:
    """This thread's database connection itself. `django.db.connection` is a proxy that finds it again on every
    attribute read, and a field's get_db_prep_save reads the connection several times: a transition's
    rows hold some 50 values, so the writes below resolve it once (docs/performance.md, "The plain core")."""
    return connections[DEFAULT_DB_ALIAS]

# -- a transition's own rows (services/claims.py and the doors) ---------------------------------
#
# The run lock and the writes of every transition, built from the models' _meta (tables, columns,
# field order: a field added to a model is written and read here by itself, with no list to keep).
# Values go through each field's pre_save and get_db_prep_save, as the ORM's own INSERT and UPDATE;
# the statements run on Django's cursor, inside Django's transaction. The ORM compiles the same
# statements anew on every call: docs/performance.md, "The plain core", has what this buys.


def _quoted(model: type[Model], alias: str) -> str:
    return ", ".join(f'{alias}."{f.column}"' for f in model._meta.concrete_fields)


def _plain(model: type[Model]) -> list[str]:
    """The attribute names of a model read with from_db: only fields whose values need no converting."""
    assert not any(hasattr(f, "from_db_value") for f in model._meta.concrete_fields), f"{model} needs converters"
    return [f.attname for f in model._meta.concrete_fields]


RUN_NAMES, PAUSE_NAMES = _plain(Run), _plain(Suspension)
PAUSE_PK = [f.primary_key for f in Suspension._meta.concrete_fields].index(True)
_LOCK_RUN = (
    f"SELECT {_quoted(Run, 'r')}, CLOCK_TIMESTAMP(), {_quoted(Suspension, 's')} "
    f"FROM {RUN} r LEFT OUTER JOIN {SUSPENSION} s ON s.run_id = r.id "
    "WHERE r.id = %s {visible} FOR NO KEY UPDATE OF r"
)


def select_locked_run(run_id: Any, held: Sequence[str] | None) -> tuple[Run, Suspension | None, datetime] | None:
    """The run `run_id` locked FOR NO KEY UPDATE, its live pause and the clock; None when not visible.

    `held`: the scopes whose rows the caller may see (None: every scope, a superuser's).
    """
    params: list[Any] = [Run._meta.pk.to_python(run_id)]  # type: ignore[union-attr]
    visible = ""
    if held is not None:
        visible = "AND (" + " OR ".join(f"r.scope_l{scopes.depth(h)} = %s" for h in held) + ")"
        params += list(held)
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_RUN.format(visible=visible), params)
        row = cursor.fetchone()
    if row is None:
        return None
    run = Run.from_db(connection.alias, RUN_NAMES, row[: len(RUN_NAMES)])
    values = row[len(RUN_NAMES) + 1 :]
    live = Suspension.from_db(connection.alias, PAUSE_NAMES, values) if values[PAUSE_PK] is not None else None
    run._state.fields_cache["suspension"] = live  # run.suspension answers without a query, as select_related
    return run, live, row[len(RUN_NAMES)]


# -- the audit chain (DESIGN §20) ------------------------------------------------------------------
#
# An event's hash covers its id, which PostgreSQL generates, so the database finishes what Python
# begins: Python writes the event's canonical text in two pieces around the id (audit.pieces), and
# the INSERT draws the id, reads the run's previous hash and hashes, in the same statement. The
# previous hash is the run's newest event by id: every event of a run is written under the run's
# lock (a new run's first event by the transaction that creates it), so its ids grow in commit
# order and the read sees the one before. The event_timeline index (run_id, id) serves it. A
# statement sees none of its own rows, so one statement holds at most one event per run. The two
# fragments below are the whole of it; `Writes.insert_events` (one event a statement) and the
# sweep (services/sql/expiry.py, one event per run) build their INSERT from them. Both keep the
# statement flat (one FROM item drawing id and prev): planning is most of what the chain costs
# PostgreSQL (docs/benchmarks.md, "Audit chain").

# The identity sequence of event.id (tests/audit/test_chain.py holds it to pg_get_serial_sequence).
EVENT_SEQUENCE = f"{EVENT}_id_seq"


def chain_source(run_id: str) -> str:
    """Select-list items `id` (drawn now) and `prev` (the run's newest hash, or 64 zeros) for the run `run_id`."""
    return (
        f"nextval('{EVENT_SEQUENCE}') AS id, coalesce((SELECT e.hash FROM {EVENT} e WHERE e.run_id = {run_id} "
        "ORDER BY e.id DESC LIMIT 1), repeat('0', 64)) AS prev"
    )


def chain_hash(before: str, after: str) -> str:
    """The hash of an event whose id and prev come from `chain_source` as `n.id`, `n.prev` (audit.event_hash)."""
    return f"encode(sha256(convert_to(n.prev || E'\\n' || {before} || n.id || {after}, 'UTF8')), 'hex')"


_ONE_EVENT = (
    f"INSERT INTO {EVENT} (id, run_id, scope, scope_l1, scope_l2, scope_l3, kind, actor, revision, data, at, "
    f"prev_hash, hash) SELECT n.id, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, n.prev, {chain_hash('%s', '%s')} "
    f"FROM (SELECT {chain_source('%s')}) n RETURNING id, prev_hash, hash"
)
_ONE_EVENT_FIELDS = ("run_id", "scope", "scope_l1", "scope_l2", "scope_l3", "kind", "actor", "revision", "data", "at")


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
        pk = model._meta.pk
        assert pk is not None
        if not isinstance(pk, AutoFieldMixin):
            self.waiting.append((text, params, None))
            return

        def keys(cursor: Any) -> None:
            for row, (key,) in zip(rows, cursor.fetchall(), strict=True):
                setattr(row, pk.attname, key)

        self.waiting.append((f'{text} RETURNING "{pk.column}"', params, keys))

    def insert_events(self, rows: Sequence[Event]) -> None:
        """New events, one chained INSERT each (`chain_source`, `chain_hash`); sets id and hashes on each when sent."""
        field_of, db = Event._meta.get_field, _db()
        for row in rows:
            params = [field_of(n).get_db_prep_save(getattr(row, n), db) for n in _ONE_EVENT_FIELDS]  # type: ignore[union-attr]
            params += [*audit.pieces({k: getattr(row, k) for k in audit.HEAD_KEYS + audit.TAIL_KEYS}), params[0]]
            row._state.adding, row._state.db = False, db.alias

            def chained(cursor: Any, row: Event = row) -> None:
                row.id, row.prev_hash, row.hash = cursor.fetchone()

            self.waiting.append((_ONE_EVENT, params, chained))

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
