"""The sweep's SQL (T9; docs/exactly-once.md, "6. The other doors, and the sweep"): the re-read of a locked batch, and
its set-based writes.

services/sweep.py locks the runs and owns the transaction; this module only
reads and writes under those locks: one UPDATE of the runs, the events (one
call of the audit chain's function, sql/rows.py), one UPDATE of approvals,
one of admissions, one INSERT of receipts, one DELETE of pauses, one INSERT
of outbox rows (`suspension.expired`, docs/api.md, "8. Push: webhooks"), in one round trip.
"""

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import connection

from ... import digests
from ...ids import uuid7
from ...models import (
    TERMINAL_STATES,
    Admission,
    AdmissionState,
    Approval,
    ApprovalStatus,
    Event,
    EventType,
    ExpiryReceipt,
    OnExpiry,
    OutboxEvent,
    Reason,
    Run,
    RunState,
    Suspension,
)
from ...observability import tracing
from .. import announce
from .rows import CHAIN_CALL, chain_params

RUN, EVENT, RECEIPT = Run._meta.db_table, Event._meta.db_table, ExpiryReceipt._meta.db_table
APPROVAL, ADMISSION, SUSPENSION = Approval._meta.db_table, Admission._meta.db_table, Suspension._meta.db_table
OUTBOX = OutboxEvent._meta.db_table

SWEEPER = "sweeper"
UNANSWERED = "nobody answered in time"

# What the sweep does with one due pause, decided under the run lock.
PAUSED = "paused"  # a paused run: expire it
DENIED = "denied"  # a paused approval whose policy says deny: fail the run (docs/policies.md)
ESCALATED = "escalated"  # a paused approval whose policy says escalate, not yet escalated: move its deadline
ADMITTED = "admitted"  # an admitted, unstarted continuation: expire it with a receipt
ORPHAN = "orphan"  # a pause left on a terminal run: delete it, the run stays as it is
# The kinds that end the run (an orphan's run has ended already; an escalation keeps it paused).
ENDING = frozenset({PAUSED, DENIED, ADMITTED})


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
    extend_seconds: int = 0  # an escalation's move of the deadline
    tags: list[str] = field(default_factory=list)  # the pause's, for its webhooks (docs/api.md, "Event types")

    @property
    def new_deadline(self) -> datetime:
        return self.expires_at + timedelta(seconds=self.extend_seconds)


def due_rows(runs: dict[UUID, tuple[str, int, str]], now: datetime) -> tuple[list[Due], list[UUID]]:
    """Re-read the pauses of the locked runs with their admissions and classify each.

    Returns (due rows, run ids left alone). A fresh statement after the lock:
    it sees what a claim or another sweeper committed before we locked the run.
    """
    found = _execute(
        f"SELECT s.id, s.run_id, s.reason, s.expires_at, a.id, a.state, a.request_digest, "
        f"p.on_expiry, p.extend_seconds, p.escalated_at, s.tags "
        f"FROM {_rows('id uuid')} JOIN {SUSPENSION} s ON s.run_id = v.id "
        f"LEFT JOIN {ADMISSION} a ON a.run_id = s.run_id AND a.suspension_id = s.id "
        f"LEFT JOIN {APPROVAL} p ON p.suspension_id = s.id",
        [_ids(list(runs))],
    )
    due: list[Due] = []
    left: list[UUID] = []
    for row_values in found:
        suspension_id, run_id, reason, expires_at, admission_id, admission_state, request_digest = row_values[:7]
        on_expiry, extend_seconds, escalated_at, tags = row_values[7:]
        if expires_at is None or expires_at > now:
            continue
        state, revision, scope = runs[run_id]
        row = Due(run_id, scope, revision, suspension_id, reason, expires_at, kind=PAUSED, tags=tags)
        if state in TERMINAL_STATES:
            row.kind = ORPHAN
        elif state == RunState.RUNNING:
            if admission_state != AdmissionState.ADMITTED:
                # Started (its engine or a closure owns it now), or not ours to judge.
                left.append(run_id)
                continue
            row.kind, row.admission_id, row.request_digest = ADMITTED, admission_id, request_digest
        elif on_expiry == OnExpiry.DENY:
            row.kind = DENIED
        elif on_expiry == OnExpiry.ESCALATE and escalated_at is None:
            row.kind, row.extend_seconds = ESCALATED, int(extend_seconds)
        due.append(row)
    return due, left


def _error(row: Due) -> str:
    if row.kind == DENIED:
        return f"rejected: {UNANSWERED}"
    deadline = digests.rfc3339(row.expires_at)
    if row.kind == ADMITTED:
        return f"expired: the admitted {row.reason} continuation was not started by its deadline {deadline}"
    return f"expired: nobody answered the {row.reason} pause by its deadline {deadline}"


# The writes are SQL reading the batch from one JSON array parameter, because
# the ORM has no UPDATE ... FROM or INSERT ... SELECT and a list of thousands
# of placeholders costs more to build and parse than the writes themselves.
# One statement per kind; event and receipt rows copy their scope columns from
# the run row itself, so each row is written under its own scope.

Statement = tuple[str, list[Any]]


def _rows(columns: str) -> str:
    """A FROM item `v` over the JSON array parameter; `columns` is "name type, ..."."""
    return f"jsonb_to_recordset(%s::jsonb) AS v({columns})"


def _json(rows: list[dict[str, Any]]) -> str:
    # Ids as 32 hex digits: a valid uuid literal, shorter than the dashed form.
    return json.dumps(rows, separators=(",", ":"))


def _ids(ids: list[UUID]) -> str:
    return _json([{"id": i.hex} for i in ids])


def _execute(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def _run_all(statements: list[Statement]) -> None:
    """Run the statements in order, in one round trip.

    Django's psycopg cursors bind parameters client-side (unless the operator
    sets `server_side_binding`), which lets one execute() carry several
    statements; a sweep batch then costs the same number of round trips
    whatever it writes.
    """
    if connection.settings_dict["OPTIONS"].get("server_side_binding"):
        for sql, params in statements:
            _execute(sql, params)
        return
    _execute("; ".join(sql for sql, _ in statements), [p for _, params in statements for p in params])


def _stamp(now: datetime) -> Any:
    return Run._meta.get_field("updated_at").get_db_prep_value(now, connection)


def _state(row: Due) -> str:
    return RunState.FAILED if row.kind == DENIED else RunState.EXPIRED


def _expire_runs(rows: list[Due], now: datetime) -> Statement:
    """Each run expired (or failed, for a policy's deny) with its own error text; `revision + 1` is the fencing bump."""
    batch = [{"run_id": r.run_id.hex, "state": _state(r), "error": _error(r)} for r in rows]
    return (
        f"UPDATE {RUN} SET state = v.state, revision = revision + 1, updated_at = %s, error = v.error "
        f"FROM {_rows('run_id uuid, state text, error text')} WHERE {RUN}.id = v.run_id",
        [_stamp(now), _json(batch)],
    )


def event_kind(row: Due) -> str:
    """The sweep's event for a row: a policy's deny and escalation are recorded on the expiry event."""
    return {ORPHAN: "pause_dropped", ESCALATED: "escalated"}.get(row.kind, "expired")


def _event_data(row: Due) -> dict[str, Any]:
    data: dict[str, Any] = {
        "suspension_id": str(row.suspension_id),
        "reason": row.reason,
        "expires_at": digests.rfc3339(row.new_deadline if row.kind == ESCALATED else row.expires_at),
    }
    if row.admission_id is not None:
        data["admission_id"] = str(row.admission_id)
    if row.kind == DENIED:
        data["on_expiry"] = OnExpiry.DENY.value
    if row.kind == ESCALATED:
        data.update(
            on_expiry=OnExpiry.ESCALATE.value,
            previous_expires_at=digests.rfc3339(row.expires_at),
            extend_seconds=row.extend_seconds,
        )
    return data


def _insert_events(rows: list[Due], now: datetime) -> Statement:
    """One event per row at the run's revision (bumped when the run expires; unchanged by an escalation or an orphan).

    Chained like every event, by the same function as the claim path's (rows.CHAIN_CALL, rows.chain_params).
    """
    events = []
    for r in rows:
        revision = r.revision + 1 if r.kind in ENDING else r.revision
        row = Event(run_id=r.run_id, kind=event_kind(r), actor=SWEEPER, revision=revision, data=_event_data(r), at=now)
        row.stamp_scope(r.scope)
        events.append(row)
    return f"SELECT count(*) FROM {CHAIN_CALL}", chain_params(events)


def _announced(row: Due) -> tuple[str, dict[str, Any]]:
    """The outbox row of an expired pause or an escalation, with the pause's tags when it has any
    (docs/api.md, "`POST /runs` — register (T1)")."""
    type_, data = _announcement(row)
    return type_, ({**data, "tags": list(row.tags)} if row.tags else data)


def _announcement(row: Due) -> tuple[str, dict[str, Any]]:
    """The outbox row of an expired pause (`suspension.expired`) or an escalation (`approval.escalated`)."""
    if row.kind == ESCALATED:
        return EventType.APPROVAL_ESCALATED, announce.escalated_data(
            run_id=row.run_id,
            suspension_id=row.suspension_id,
            scope=row.scope,
            revision=row.revision,
            deadline=row.new_deadline,
            previous=row.expires_at,
        )
    data = announce.expired_data(
        run_id=row.run_id,
        suspension_id=row.suspension_id,
        scope=row.scope,
        revision=row.revision + 1,
        reason=row.reason,
        deadline=row.expires_at,
        admission_id=row.admission_id,
    )
    if row.kind == DENIED:
        data.update(state=RunState.FAILED.value, on_expiry=OnExpiry.DENY.value)
    return EventType.SUSPENSION_EXPIRED, data


def _insert_outbox(rows: list[Due], now: datetime) -> Statement:
    """One outbox row per expired or escalated pause, under its run's scope (orphans announce nothing); with traces
    on, each carries the sweep's trace context, so its webhooks are sent in the sweep task's trace."""
    batch = [{"run_id": r.run_id.hex, "type": kind, "data": data} for r in rows for kind, data in [_announced(r)]]
    return (
        f"INSERT INTO {OUTBOX} (run_id, scope, scope_l1, scope_l2, scope_l3, type, data, created_at, dispatched_at, "
        "traceparent) "
        f"SELECT r.id, r.scope, r.scope_l1, r.scope_l2, r.scope_l3, v.type, v.data, %s, NULL, %s "
        f"FROM {_rows('run_id uuid, type text, data jsonb')} JOIN {RUN} r ON r.id = v.run_id",
        [_stamp(now), tracing.traceparent(), _json(batch)],
    )


def _escalate(rows: list[Due], now: datetime) -> list[Statement]:
    """Move each escalated pause's deadline (pause and approval), once; the reminder may go out again."""
    batch = _json([{"id": r.suspension_id.hex, "deadline": str(_stamp(r.new_deadline))} for r in rows])
    return [
        (
            f"UPDATE {SUSPENSION} SET expires_at = v.deadline, deadline = v.deadline "
            f"FROM {_rows('id uuid, deadline timestamptz')} WHERE {SUSPENSION}.id = v.id",
            [batch],
        ),
        (
            f"UPDATE {APPROVAL} SET expires_at = v.deadline, escalated_at = %s, reminded_at = NULL, "
            f"at_risk_at = {APPROVAL}.created_at + (v.deadline - {APPROVAL}.created_at) * 0.8 "
            f"FROM {_rows('id uuid, deadline timestamptz')} WHERE {APPROVAL}.suspension_id = v.id",
            [_stamp(now), batch],
        ),
    ]


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


def _resolve_approvals(rows: list[Due], now: datetime) -> Statement:
    """Each ended approval expired, or denied by the sweeper when its policy says so."""
    batch = [
        {"id": r.suspension_id.hex, "status": ApprovalStatus.DENIED if r.kind == DENIED else ApprovalStatus.EXPIRED}
        for r in rows
    ]
    decided_by = f"CASE WHEN v.status = '{ApprovalStatus.DENIED}' THEN %s ELSE '' END"
    return (
        f"UPDATE {APPROVAL} SET status = v.status, resolved_at = %s, note = %s, decided_by = {decided_by} "
        f"FROM {_rows('id uuid, status text')} WHERE {APPROVAL}.status = %s AND {APPROVAL}.suspension_id = v.id",
        [_stamp(now), UNANSWERED, SWEEPER, _json(batch), ApprovalStatus.PENDING],
    )


def write(rows: list[Due], now: datetime) -> None:
    """The batch's writes, one statement per kind, in one round trip."""
    expiring = [r for r in rows if r.kind in ENDING]
    escalated = [r for r in rows if r.kind == ESCALATED]
    approvals = [r for r in rows if r.reason == Reason.APPROVAL and r.kind != ESCALATED]
    admitted = [r for r in rows if r.kind == ADMITTED]
    statements = [_expire_runs(expiring, now)] if expiring else []
    statements.append(_insert_events(rows, now))
    if expiring or escalated:
        statements.append(_insert_outbox(expiring + escalated, now))
    if escalated:
        statements += _escalate(escalated, now)
    if approvals:
        statements.append(_resolve_approvals(approvals, now))
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
            [_ids([r.suspension_id for r in rows if r.kind != ESCALATED])],
        )
    )
    _run_all(statements)
