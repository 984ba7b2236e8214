"""The fixed statements of the hot transitions, written once as SQL for PostgreSQL, with their ORM twins.

Every pause, claim and start issues the same few statements: the run lock
(run, live pause and clock in one SELECT), the run's move, a few INSERTs, an
UPDATE or a DELETE by key. The ORM compiles each of them again on every
call; here each is built once from the models' own metadata (tables,
columns, field order; a new column is picked up by itself) and cached, and
the values still go through each field's `get_db_prep_save`, so the rows
written are the ones the ORM writes. tests/services/test_claims_sql.py runs
the transitions both ways and compares every row they leave.

On other databases (the embedded SQLite) each function runs its ORM twin,
and `ORM_ONLY` makes PostgreSQL do the same (the equivalence test).
"""

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import DateTimeField, Func, Model
from django.db.models.fields import AutoFieldMixin

from .. import fixedsql, scopes, selectors
from ..exceptions import NotFound
from ..fixedsql import db
from ..models import Admission, AdmissionState, Run, Suspension
from ..principals import Principal
from .batch import BATCH, Batch, Unbatched, attempt_of, batched, send, write  # noqa: F401 (Batch: named in the docs)
from .sql_values import inserted_columns, inserted_fields, prepare, row_values

# Set by the equivalence test: the ORM twins on PostgreSQL as well.
ORM_ONLY = False


def enabled() -> bool:
    return not ORM_ONLY and _postgresql()


@functools.cache
def _postgresql() -> bool:
    return bool(connections[DEFAULT_DB_ALIAS].vendor == "postgresql")


def q(name: str) -> str:
    return connection.ops.quote_name(name)


def _columns(model: type[Model]) -> str:
    table = q(model._meta.db_table)
    return ", ".join(f"{table}.{q(f.column)}" for f in model._meta.concrete_fields)


# -- the run lock --------------------------------------------------------------------------------


class ClockTimestamp(Func):
    """PostgreSQL's clock at the moment of the statement (one `now` per request)."""

    template = "CLOCK_TIMESTAMP()"
    output_field = DateTimeField()


def _visible(principal: Principal, lookup: str) -> tuple[tuple[int, ...] | None, list[Any]]:
    """Principal.scope_q() as SQL parts: the depths of the held scopes (None: all, a superuser's) and their values.

    A principal that holds nothing sees nothing: NotFound at once, as the ORM,
    whose empty filter sends no statement.
    """
    if principal.superuser:
        return None, []
    held = principal.scopes_with()
    if not held:
        raise NotFound(f"{lookup} not found")
    return tuple(scopes.depth(s) for s in held), list(held)


def _where_visible(table: str, depths: tuple[int, ...] | None, key: str) -> str:
    where = f"{table}.{q(key)} = %s"
    if depths is None:
        return where
    visible = " OR ".join(f"{table}.{q(f'scope_l{d}')} = %s" for d in depths)
    return f"({visible}) AND {where}"


@functools.cache
def run_read(*also: type[Model]) -> tuple[str, str]:
    """(the SELECT of a run, the clock, its pause and the columns of `also`; FROM the run joined to its pause)."""
    run, pause = q(Run._meta.db_table), q(Suspension._meta.db_table)
    models: tuple[type[Model], ...] = (Suspension, *also)
    columns = ", ".join([_columns(Run), "CLOCK_TIMESTAMP()", *(_columns(m) for m in models)])
    return f"SELECT {columns}", f"FROM {run} LEFT OUTER JOIN {pause} ON ({run}.{q('id')} = {pause}.{q('run_id')})"


@functools.cache
def _lock_sql(depths: tuple[int, ...] | None, lock: bool = True) -> str:
    """The lock of one run in the scopes of these depths (None: every scope, a superuser's); `lock=False`: the read."""
    run = q(Run._meta.db_table)
    select, joined = run_read()
    where = _where_visible(run, depths, "id")
    return f"{select} {joined} WHERE {where}" + (f" FOR NO KEY UPDATE OF {run}" if lock else "")


RUN_NAMES = [f.attname for f in Run._meta.concrete_fields]
PAUSE_NAMES = [f.attname for f in Suspension._meta.concrete_fields]
RUN_FIELDS = len(RUN_NAMES)
PAUSE_PK = [f.primary_key for f in Suspension._meta.concrete_fields].index(True)
LOCK_FIELDS = RUN_FIELDS + 1 + len(PAUSE_NAMES)  # run_read's own columns: the run, the clock, the pause


def lock_run(principal: Principal, run_id: UUID | str) -> tuple[Run, Suspension | None, datetime]:
    """`SELECT ... FOR NO KEY UPDATE OF run` of one visible run, its live pause and the clock (404 otherwise)."""
    if enabled():
        return _lock_run_sql(principal, run_id)
    query = selectors.runs(principal).filter(pk=run_id).select_related("suspension")
    query = query.select_for_update(no_key=True, of=("self",))
    postgres = connection.vendor == "postgresql"
    if postgres:
        query = query.annotate(db_now=ClockTimestamp())
    run = query.first()
    if run is None:
        raise NotFound(f"run {run_id} not found")
    try:
        suspension: Suspension | None = run.suspension
    except Suspension.DoesNotExist:
        suspension = None
    if postgres:
        return run, suspension, run.db_now  # type: ignore[attr-defined]
    # SQLite's own clock has millisecond resolution: the embedded default reads
    # the one clock db_now() reads, so the deadline partition never disagrees with itself.
    from .claims import db_now

    return run, suspension, db_now()


def _lock_run_sql(principal: Principal, run_id: UUID | str) -> tuple[Run, Suspension | None, datetime]:
    pk = Run._meta.pk.to_python(run_id)  # type: ignore[union-attr]
    depths, params = _visible(principal, f"run {run_id}")
    params.append(pk)
    conn = db()
    attempt = attempt_of(conn)
    if attempt is not None and attempt.guard is not None:
        raise Unbatched("an attempt reads one run")
    row = fixedsql.execute(_lock_sql(depths, lock=attempt is None), params, conn).fetchone()
    if row is None:
        raise NotFound(f"run {run_id} not found")
    return run_of_row(conn, row, attempt)


def run_of_row(conn: Any, row: Sequence[Any], attempt: Any) -> tuple[Run, Suspension | None, datetime]:
    """The run, its live pause and the clock from a row that starts with `run_read`'s columns.

    The attempt open on the connection (None: none) records the run as its guard.
    """
    alias = conn.alias
    run = Run.from_db(alias, RUN_NAMES, row[:RUN_FIELDS])
    if attempt is not None:
        attempt.guard = [run.pk, run.revision, run.state]
    values = row[RUN_FIELDS + 1 : LOCK_FIELDS]
    suspension = Suspension.from_db(alias, PAUSE_NAMES, values) if values[PAUSE_PK] is not None else None
    # What select_related leaves: run.suspension answers without a query, and the pause knows its run.
    run._state.fields_cache["suspension"] = suspension
    if suspension is not None:
        suspension._state.fields_cache["run"] = run
    return run, suspension, row[RUN_FIELDS]


# -- writes --------------------------------------------------------------------------------------


@contextmanager
def transition() -> Iterator[None]:
    """`transaction.atomic()` for one transition, its fixed writes sent together (see batch.Batch).

    On other databases (the embedded SQLite), and when a transition is
    already open on the connection, it is `transaction.atomic()` alone.
    """
    with transaction.atomic():
        conn = db()
        if not enabled() or BATCH in conn.__dict__:
            yield
            return
        with batched(conn):
            yield


@functools.cache
def _update_sql(model: type[Model], names: tuple[str, ...], keys: tuple[str, ...]) -> str:
    table = q(model._meta.db_table)
    sets = ", ".join(f"{q(_field(model, n).column)} = %s" for n in names)
    where = " AND ".join(f"{table}.{q(_field(model, k).column)} = %s" for k in keys)
    return f"UPDATE {table} SET {sets} WHERE {where}"


def _field(model: type[Model], name: str) -> Any:
    return model._meta.get_field(name)


def update(model: type[Model], where: dict[str, Any], **values: Any) -> None:
    """One UPDATE of some columns of the rows whose columns equal `where` (a key, a key and a state)."""
    if not enabled():
        model._default_manager.filter(**where).update(**values)
        return
    conn = db()
    names, keys = tuple(values), tuple(where)
    params = [prepare(_field(model, n))(values[n], conn) for n in names]
    params += [prepare(_field(model, k))(where[k], conn) for k in keys]
    write(conn, model._meta.db_table, _update_sql(model, names, keys), params)


def update_run(run_id: UUID, **values: Any) -> None:
    """One UPDATE of a run's columns by its key (the move of a transition)."""
    update(Run, {"id": run_id}, **values)


@functools.cache
def _insert_sql(model: type[Model], rows: int, returning: bool) -> str:
    fields = inserted_fields(model)
    table = q(model._meta.db_table)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = f"INSERT INTO {table} ({', '.join(q(f.column) for f in fields)}) VALUES {', '.join([row] * rows)}"
    if returning:
        sql += f" RETURNING {table}.{q(model._meta.pk.column)}"  # type: ignore[union-attr]
    return sql


def insert(rows: Sequence[Model], *, keys: bool = True) -> None:
    """New rows of one model in ONE statement (several: one multi-row VALUES), keys read back if generated.

    What `save(force_insert=True)` (one row) and `bulk_create` (several)
    write, with the same prepared values; no model signals are sent (no
    receiver listens to these models). `keys=False`: the caller never reads
    a generated key back (the rows' pk stays None on PostgreSQL), so the
    INSERT can wait in the transition's batch like any other write.
    """
    if not rows:
        return
    model = type(rows[0])
    if not enabled():
        if len(rows) == 1:
            rows[0].save(force_insert=True)
        else:
            model._default_manager.bulk_create(rows)
        return
    conn = db()
    columns = inserted_columns(model)
    params: list[Any] = []
    for row in rows:
        row_values(row, columns, conn, params)
    pk = model._meta.pk
    generated = isinstance(pk, AutoFieldMixin)
    sql = _insert_sql(model, len(rows), returning=generated and keys)
    batch: Batch | None = conn.__dict__.get(BATCH)
    if generated and keys and batch is not None and batch.attempt is not None:  # the keys come when it lands

        def set_keys(found: list[Any]) -> None:
            for row, key in zip(rows, found, strict=True):
                setattr(row, pk.attname, key)

        batch.add_keyed(model._meta.db_table, sql, params, q(pk.column), set_keys)
    elif generated and keys:  # the keys are read back: the statement goes now, with what waits
        cursor = send(conn, model._meta.db_table, sql, params)
        for row, (key,) in zip(rows, cursor.fetchall(), strict=True):
            setattr(row, pk.attname, key)
    else:
        write(conn, model._meta.db_table, sql, params)
    for row in rows:
        row._state.adding = False
        row._state.db = conn.alias


# -- reads under the run lock ------------------------------------------------------------------


@functools.cache
def _select_sql(model: type[Model], keys: tuple[str, ...], order: tuple[str, ...], limit: int | None) -> str:
    assert not any(hasattr(f, "from_db_value") for f in model._meta.concrete_fields), "values need converting"
    table = q(model._meta.db_table)
    where = " AND ".join(f"{table}.{q(_field(model, k).column)} = %s" for k in keys)
    sql = f"SELECT {_columns(model)} FROM {table} WHERE {where}"
    if order:
        sql += " ORDER BY " + ", ".join(f"{table}.{q(_field(model, o).column)} ASC" for o in order)
    return sql + (f" LIMIT {limit}" if limit else "")


def select(model: type[Model], order: Sequence[str] = (), limit: int | None = None, **equals: Any) -> list[Any]:
    """The rows whose columns equal `equals`, in `order` (ascending), at most `limit`."""
    if not enabled():
        query = model._default_manager.filter(**equals).order_by(*order)
        return list(query[:limit] if limit else query)
    conn = db()
    keys = tuple(equals)
    params = [prepare(_field(model, k))(equals[k], conn) for k in keys]
    names = [f.attname for f in model._meta.concrete_fields]
    found = fixedsql.execute(_select_sql(model, keys, tuple(order), limit), params, conn).fetchall()
    return [model.from_db(conn.alias, names, row) for row in found]


def first(model: type[Model], **equals: Any) -> Any:
    """`model.objects.filter(**equals).first()`: the row of a unique key, or None."""
    found = select(model, order=(model._meta.pk.name,), limit=1, **equals)  # type: ignore[union-attr]
    return found[0] if found else None


@functools.cache
def _admission_run_sql(depths: tuple[int, ...] | None) -> str:
    table = q(Admission._meta.db_table)
    return f"SELECT {table}.{q('run_id')} FROM {table} WHERE {_where_visible(table, depths, 'id')}"


def admission_run(principal: Principal, admission_id: UUID | str) -> UUID | None:
    """The run of an admission the principal may see (None otherwise): what a start locks."""
    if not enabled():
        found = selectors.admissions(principal).filter(pk=admission_id).values_list("run_id", flat=True)
        return found.first()
    pk = Admission._meta.pk.to_python(admission_id)  # type: ignore[union-attr]
    try:
        depths, params = _visible(principal, f"admission {admission_id}")
    except NotFound:
        return None
    row = fixedsql.execute(_admission_run_sql(depths), [*params, pk]).fetchone()
    return row[0] if row is not None else None


# -- fixed writes by key ------------------------------------------------------------------------


@functools.cache
def _by_key_sql(kind: str) -> str:
    admission, pause = q(Admission._meta.db_table), q(Suspension._meta.db_table)
    return {
        "close_started": f"UPDATE {admission} SET {q('state')} = %s WHERE ({admission}.{q('run_id')} = %s"
        f" AND {admission}.{q('state')} = %s)",
        "admission_state": f"UPDATE {admission} SET {q('state')} = %s WHERE {admission}.{q('id')} = %s",
        "delete_pause": f"DELETE FROM {pause} WHERE {pause}.{q('id')} = %s",
    }[kind]


def _execute(kind: str, params: list[Any]) -> None:
    table = Suspension._meta.db_table if kind == "delete_pause" else Admission._meta.db_table
    write(db(), table, _by_key_sql(kind), params)


def close_started(run_id: UUID) -> None:
    """A new pause ends the execution the previous start granted: its admission is done."""
    if enabled():
        _execute("close_started", [AdmissionState.DONE, run_id, AdmissionState.STARTED])
    else:
        Admission.objects.filter(run_id=run_id, state=AdmissionState.STARTED).update(state=AdmissionState.DONE)


def set_admission_state(admission_id: UUID, state: str) -> None:
    if enabled():
        _execute("admission_state", [state, admission_id])
    else:
        Admission.objects.filter(pk=admission_id).update(state=state)


def delete_pause(suspension_id: UUID) -> None:
    if enabled():
        _execute("delete_pause", [suspension_id])
    else:
        Suspension.objects.filter(pk=suspension_id).delete()
