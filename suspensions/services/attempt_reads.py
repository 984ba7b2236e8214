"""An attempt's one read: the run, its live pause, the clock and the rows its transition reads next, in one SELECT.

An attempt (services.attempts) reads without a lock and lands as one
guarded statement. A start read four things before it wrote (the run of
the admission, the run with its pause, the admission, its start row) and a
vote three (the run with its pause, the approval record, the earlier
votes): each a statement of its own, with its round trip and its share of
psycopg's Python. Read together they are one statement, and one snapshot,
which is what the attempt's guard then checks against: the start's
unique admission key and the vote's guard on the run stand behind them as
they stood behind the separate reads.

Only inside an attempt. Under the run lock (an attempt that gave way, a
caller's transaction, the embedded SQLite, the ORM twins) each function
answers None and the transition reads as before, one statement each after
the lock: a locking read that waited for the lock returns the run's newest
row but the joined rows of the snapshot it started with (PostgreSQL
rechecks only the locked row), so a start or a vote that landed meanwhile,
neither of which moves the run's revision, would not be seen.
"""

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db.models import Model

from .. import fixedsql
from ..exceptions import NotFound
from ..fixedsql import db
from ..models import Admission, Approval, ApprovalVote, Run, Start, Suspension
from ..principals import Principal
from .batch import attempt_of
from .claims_sql import LOCK_FIELDS, _visible, _where_visible, enabled, q, run_of_row, run_read


@dataclass
class StartRead:
    run: Run
    live: Suspension | None
    now: datetime
    admission: Admission
    start: Start | None


@dataclass
class VoteRead:
    run: Run
    live: Suspension | None
    now: datetime
    record: Approval | None
    votes: list[ApprovalVote]


def _in_attempt() -> tuple[Any, Any]:
    """(the connection, its attempt) when an attempt that has read nothing yet is open on it; else (None, None)."""
    if not enabled():
        return None, None
    conn = db()
    attempt = attempt_of(conn)
    return (conn, attempt) if attempt is not None and attempt.guard is None else (None, None)


@functools.cache
def _shape(model: type[Model]) -> tuple[list[str], int]:
    """(the attribute names of `model`'s columns in order, the position of its key)."""
    fields = model._meta.concrete_fields
    assert not any(hasattr(f, "from_db_value") for f in fields), "values need converting"
    return [f.attname for f in fields], [f.primary_key for f in fields].index(True)


def _model(conn: Any, model: type[Model], values: Any) -> Any:
    """The row of `model` in these columns, or None for a LEFT JOIN that found none (a null key)."""
    names, pk = _shape(model)
    return model.from_db(conn.alias, names, values) if values[pk] is not None else None


@functools.cache
def _start_sql(depths: tuple[int, ...] | None) -> str:
    run, admission, start = q(Run._meta.db_table), q(Admission._meta.db_table), q(Start._meta.db_table)
    select, joined = run_read(Admission, Start)
    return (
        f"{select} {joined} INNER JOIN {admission} ON ({admission}.{q('run_id')} = {run}.{q('id')})"
        f" LEFT OUTER JOIN {start} ON ({start}.{q('admission_id')} = {admission}.{q('id')})"
        f" WHERE {_where_visible(admission, depths, 'id')}"
    )


def start_read(principal: Principal, admission_id: UUID | str) -> StartRead | None:
    """An admission the principal may see, with its run, the run's pause, the clock and the start (NotFound)."""
    conn, attempt = _in_attempt()
    if conn is None:
        return None
    pk = Admission._meta.pk.to_python(admission_id)  # type: ignore[union-attr]
    depths, params = _visible(principal, f"admission {admission_id}")
    row = fixedsql.execute(_start_sql(depths), [*params, pk], conn).fetchone()
    if row is None:
        raise NotFound(f"admission {admission_id} not found")
    run, live, now = run_of_row(conn, row, attempt)
    middle = LOCK_FIELDS + len(_shape(Admission)[0])
    admission = _model(conn, Admission, row[LOCK_FIELDS:middle])
    return StartRead(run, live, now, admission, _model(conn, Start, row[middle:]))


@functools.cache
def _vote_sql(depths: tuple[int, ...] | None) -> str:
    run, pause = q(Run._meta.db_table), q(Suspension._meta.db_table)
    approval, vote = q(Approval._meta.db_table), q(ApprovalVote._meta.db_table)
    select, joined = run_read(Approval, ApprovalVote)
    return (
        f"{select} {joined} LEFT OUTER JOIN {approval} ON ({approval}.{q('suspension_id')} = %s"
        f" AND {approval}.{q('run_id')} = {run}.{q('id')})"
        f" LEFT OUTER JOIN {vote} ON ({vote}.{q('suspension_id')} = {pause}.{q('id')})"
        f" WHERE {_where_visible(run, depths, 'id')} ORDER BY {vote}.{q('cast_at')} ASC, {vote}.{q('id')} ASC"
    )


def vote_read(principal: Principal, run_id: UUID | str, suspension_id: UUID | str) -> VoteRead | None:
    """A visible run with its pause and the clock, the approval record of `suspension_id`, the pause's votes."""
    conn, attempt = _in_attempt()
    if conn is None:
        return None
    depths, params = _visible(principal, f"run {run_id}")
    key = Approval._meta.pk.to_python(suspension_id)  # type: ignore[union-attr]
    run_pk = Run._meta.pk.to_python(run_id)  # type: ignore[union-attr]
    rows = fixedsql.execute(_vote_sql(depths), [key, *params, run_pk], conn).fetchall()
    if not rows:
        raise NotFound(f"run {run_id} not found")
    run, live, now = run_of_row(conn, rows[0], attempt)
    middle = LOCK_FIELDS + len(_shape(Approval)[0])
    record = _model(conn, Approval, rows[0][LOCK_FIELDS:middle])
    votes = [v for v in (_model(conn, ApprovalVote, row[middle:]) for row in rows) if v is not None]
    return VoteRead(run, live, now, record, votes)
