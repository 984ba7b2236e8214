"""The sweep's SQL: the re-read of a locked batch, and its set-based writes (DESIGN §6, T9).

services/sweep.py locks the runs and owns the transaction; this module only
reads and writes under those locks. Every write of a batch is set-based: one
UPDATE of the runs, one INSERT of events, one UPDATE of approvals, one of
admissions, one INSERT of receipts, one DELETE of pauses, one INSERT of
outbox rows (`suspension.expired`, DESIGN §14), in one round trip on
PostgreSQL.
"""

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from django.db import connection
from django.utils.dateparse import parse_datetime

from .. import digests
from ..ids import uuid7
from ..models import (
    TERMINAL_STATES,
    Admission,
    AdmissionState,
    Approval,
    ApprovalStatus,
    Event,
    ExpiryReceipt,
    OutboxEvent,
    Reason,
    Run,
    RunState,
    Suspension,
)
from . import outbox

RUN, EVENT, RECEIPT = Run._meta.db_table, Event._meta.db_table, ExpiryReceipt._meta.db_table
APPROVAL, ADMISSION, SUSPENSION = Approval._meta.db_table, Admission._meta.db_table, Suspension._meta.db_table
OUTBOX = OutboxEvent._meta.db_table

SWEEPER = "sweeper"
UNANSWERED = "nobody answered in time"

# What the sweep does with one due pause, decided under the run lock.
PAUSED = "paused"  # a paused run: expire it
ADMITTED = "admitted"  # an admitted, unstarted continuation: expire it with a receipt
ORPHAN = "orphan"  # a pause left on a terminal run: delete it, the run stays as it is


@dataclass
class Due:
    """One locked run and its due pause."""

    run_id: UUID
    scope: str
    revision: int
    suspension_id: UUID
    reason: str
    expires_at: datetime
    kind: str
    admission_id: UUID | None = None
    request_digest: str = ""


def due_rows(runs: dict[UUID, tuple[str, int, str]], now: datetime) -> tuple[list[Due], list[UUID]]:
    """Re-read the pauses of the locked runs with their admissions and classify each.

    Returns (due rows, run ids left alone). A fresh statement after the lock:
    it sees what a claim or another sweeper committed before we locked the run.
    """
    found = _execute(
        f"SELECT s.id, s.run_id, s.reason, s.expires_at, a.id, a.state, a.request_digest "
        f"FROM {_rows('id uuid')} JOIN {SUSPENSION} s ON s.run_id = v.id "
        f"LEFT JOIN {ADMISSION} a ON a.run_id = s.run_id AND a.suspension_id = s.id",
        [_ids(list(runs))],
    )
    due: list[Due] = []
    left: list[UUID] = []
    for suspension_id, run_id, reason, expires_at, admission_id, admission_state, request_digest in found:
        run_id, expires_at = _uuid(run_id), _moment(expires_at)
        if expires_at is None or expires_at > now:
            continue
        state, revision, scope = runs[run_id]
        row = Due(run_id, scope, revision, _uuid(suspension_id), reason, expires_at, kind=PAUSED)
        if state in TERMINAL_STATES:
            row.kind = ORPHAN
        elif state == RunState.RUNNING:
            if admission_state != AdmissionState.ADMITTED:
                # Started (its engine or a closure owns it now), or not ours to judge.
                left.append(run_id)
                continue
            row.kind, row.admission_id, row.request_digest = ADMITTED, _uuid(admission_id), request_digest
        due.append(row)
    return due, left


def _uuid(value: Any) -> Any:
    # SQLite hands back the hex text of an id, PostgreSQL a UUID.
    return value if value is None or isinstance(value, UUID) else UUID(value)


def _moment(value: Any) -> datetime | None:
    # SQLite hands back the naive UTC time Django stored (as text, or parsed by its converter).
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else parse_datetime(value)
    assert moment is not None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _error(row: Due) -> str:
    deadline = digests.rfc3339(row.expires_at)
    if row.kind == ADMITTED:
        return f"expired: the admitted {row.reason} continuation was not started by its deadline {deadline}"
    return f"expired: nobody answered the {row.reason} pause by its deadline {deadline}"


# The writes are SQL reading the batch from one JSON array parameter, because
# the ORM has no UPDATE ... FROM or INSERT ... SELECT and a list of thousands
# of placeholders costs more to build and parse than the writes themselves.
# One statement per kind; event and receipt rows copy their scope columns from
# the run row itself, so each row is written under its own scope. Everything
# but `_rows` and `_run_all` is the same SQL on PostgreSQL and SQLite (3.33+).

Statement = tuple[str, list[Any]]


def _rows(columns: str) -> str:
    """A FROM item `v` over the JSON array parameter; `columns` is "name type, ..." (types for PostgreSQL)."""
    if connection.vendor == "postgresql":
        return f"jsonb_to_recordset(%s::jsonb) AS v({columns})"
    picked = ", ".join(f"json_extract(value, '$.{n}') AS {n}" for n in (c.split()[0] for c in columns.split(",")))
    return f"(SELECT {picked} FROM json_each(%s)) AS v"


def _json(rows: list[dict[str, Any]]) -> str:
    # Ids as 32 hex digits: what SQLite stores, and a valid uuid literal for PostgreSQL.
    return json.dumps(rows, separators=(",", ":"))


def _ids(ids: list[UUID]) -> str:
    return _json([{"id": i.hex} for i in ids])


def _execute(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def _run_all(statements: list[Statement]) -> None:
    """Run the statements in order; on PostgreSQL in one round trip.

    Django's psycopg cursors bind parameters client-side, which lets one
    execute() carry several statements; a sweep batch then costs the same
    number of round trips whatever it writes.
    """
    if connection.vendor == "postgresql" and not connection.settings_dict["OPTIONS"].get("server_side_binding"):
        _execute("; ".join(sql for sql, _ in statements), [p for _, params in statements for p in params])
        return
    for sql, params in statements:
        _execute(sql, params)


def _stamp(now: datetime) -> Any:
    return Run._meta.get_field("updated_at").get_db_prep_value(now, connection)


def _expire_runs(rows: list[Due], now: datetime) -> Statement:
    """Each run expired with its own error text; `revision + 1` is the fencing bump."""
    return (
        f"UPDATE {RUN} SET state = %s, revision = revision + 1, updated_at = %s, error = v.error "
        f"FROM {_rows('run_id uuid, error text')} WHERE {RUN}.id = v.run_id",
        [RunState.EXPIRED, _stamp(now), _json([{"run_id": r.run_id.hex, "error": _error(r)} for r in rows])],
    )


def _event_data(row: Due) -> dict[str, Any]:
    data = {
        "suspension_id": str(row.suspension_id),
        "reason": row.reason,
        "expires_at": digests.rfc3339(row.expires_at),
    }
    if row.admission_id is not None:
        data["admission_id"] = str(row.admission_id)
    return data


def _insert_events(rows: list[Due], now: datetime) -> Statement:
    """One event per row at the run's revision (already bumped when the run expired)."""
    batch = [
        {"run_id": r.run_id.hex, "kind": "expired" if r.kind != ORPHAN else "pause_dropped", "data": _event_data(r)}
        for r in rows
    ]
    return (
        f"INSERT INTO {EVENT} (run_id, scope, scope_l1, scope_l2, scope_l3, kind, actor, revision, data, at) "
        f"SELECT r.id, r.scope, r.scope_l1, r.scope_l2, r.scope_l3, v.kind, %s, r.revision, v.data, %s "
        f"FROM {_rows('run_id uuid, kind text, data jsonb')} JOIN {RUN} r ON r.id = v.run_id",
        [SWEEPER, _stamp(now), _json(batch)],
    )


def _insert_outbox(rows: list[Due], now: datetime) -> Statement:
    """One `suspension.expired` outbox row per expired pause, under its run's scope (orphans announce nothing)."""
    batch = [
        {
            "run_id": r.run_id.hex,
            "data": outbox.expired_data(
                run_id=r.run_id,
                suspension_id=r.suspension_id,
                scope=r.scope,
                revision=r.revision + 1,
                reason=r.reason,
                deadline=r.expires_at,
                admission_id=r.admission_id,
            ),
        }
        for r in rows
    ]
    return (
        f"INSERT INTO {OUTBOX} (run_id, scope, scope_l1, scope_l2, scope_l3, type, data, created_at) "
        f"SELECT r.id, r.scope, r.scope_l1, r.scope_l2, r.scope_l3, %s, v.data, %s "
        f"FROM {_rows('run_id uuid, data jsonb')} JOIN {RUN} r ON r.id = v.run_id",
        [outbox.SUSPENSION_EXPIRED, _stamp(now), _json(batch)],
    )


def _receipt_row(row: Due, now: datetime) -> dict[str, Any]:
    digest = digests.expiry_digest(
        run_id=row.run_id,
        suspension_id=row.suspension_id,
        scope=row.scope,
        request_digest=row.request_digest,
        run_revision=row.revision + 1,
        expired_at=now,
    )
    return {
        "id": uuid7().hex,
        "run_id": row.run_id.hex,
        "suspension_id": row.suspension_id.hex,
        "request_digest": row.request_digest,
        "digest": digest,
    }


def _insert_receipts(rows: list[Due], now: datetime) -> Statement:
    """One expiry receipt per expired admission, bound to its event; its digest over the other fields."""
    columns = "id uuid, run_id uuid, suspension_id uuid, request_digest text, digest text"
    return (
        f"INSERT INTO {RECEIPT} (id, run_id, suspension_id, scope, scope_l1, scope_l2, scope_l3, request_digest, "
        f"run_revision, event_id, digest, expired_at) "
        f"SELECT v.id, r.id, v.suspension_id, r.scope, r.scope_l1, r.scope_l2, r.scope_l3, v.request_digest, "
        f"r.revision, e.id, v.digest, %s FROM {_rows(columns)} JOIN {RUN} r ON r.id = v.run_id "
        f"JOIN {EVENT} e ON e.run_id = r.id AND e.revision = r.revision AND e.kind = %s",
        [_stamp(now), _json([_receipt_row(r, now) for r in rows]), "expired"],
    )


def write(rows: list[Due], now: datetime) -> None:
    """The batch's writes, one statement per kind, in one round trip on PostgreSQL."""
    expiring = [r for r in rows if r.kind != ORPHAN]
    approvals = [r.suspension_id for r in rows if r.reason == Reason.APPROVAL]
    admitted = [r for r in rows if r.kind == ADMITTED]
    statements = [_expire_runs(expiring, now)] if expiring else []
    statements.append(_insert_events(rows, now))
    if expiring:
        statements.append(_insert_outbox(expiring, now))
    if approvals:
        statements.append(
            (
                f"UPDATE {APPROVAL} SET status = %s, resolved_at = %s, note = %s "
                f"WHERE status = %s AND suspension_id IN (SELECT v.id FROM {_rows('id uuid')})",
                [ApprovalStatus.EXPIRED, _stamp(now), UNANSWERED, ApprovalStatus.PENDING, _ids(approvals)],
            )
        )
    if admitted:
        statements.append(
            (
                f"UPDATE {ADMISSION} SET state = %s WHERE state = %s AND id IN (SELECT v.id FROM {_rows('id uuid')})",
                [
                    AdmissionState.EXPIRED,
                    AdmissionState.ADMITTED,
                    _ids([r.admission_id for r in admitted if r.admission_id]),
                ],
            )
        )
        statements.append(_insert_receipts(admitted, now))
    statements.append(
        (
            f"DELETE FROM {SUSPENSION} WHERE id IN (SELECT v.id FROM {_rows('id uuid')})",
            [_ids([r.suspension_id for r in rows])],
        )
    )
    _run_all(statements)
