"""The three steps of a fan-out (`outbox.fan_out`): fixed SQL on PostgreSQL, the ORM elsewhere.

- `hold`: lock up to `limit` undispatched events (SKIP LOCKED, oldest
  first) and split them into those to fan out now and those held back
  behind an earlier undispatched event of their run that this call does
  not hold; with the database clock.
- `endpoints`: the active endpoints of some scopes, oldest first.
- `dispatch`: the messages inserted (a message already there is left as it
  is) and the fanned-out events marked dispatched.

On PostgreSQL `hold` and `dispatch` are one statement each (the ORM's
compiling was most of a fan-out's CPU); on SQLite, and under
`claims_sql.ORM_ONLY` (the push tests run both), the ORM's queries.
"""

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from ..models import MessageStatus, OutboxEvent, WebhookEndpoint
from ..models import WebhookMessage as Message
from . import claims, claims_sql

_OUTBOX = OutboxEvent._meta.db_table
_MESSAGE = Message._meta.db_table
_ENDPOINT = WebhookEndpoint._meta.db_table

# The held events (locked SKIP LOCKED, oldest first, at most `limit`) in id order, with the statement's
# clock and whether an earlier undispatched event of the run is outside what this call holds (held back).
# That probe reads the run's own entries of outbox_undispatched_run, so a held event costs the same however
# many events of other runs wait (it read all of them before: docs/benchmarks.md, "Soak").
_HOLD_SQL = f"""
WITH held AS (
    SELECT * FROM {_OUTBOX}
    WHERE dispatched_at IS NULL {{ids}} {{older}}
    ORDER BY created_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
SELECT h.*, statement_timestamp() AS fanned_at, EXISTS (
    SELECT 1 FROM {_OUTBOX} o
    WHERE o.run_id = h.run_id AND o.dispatched_at IS NULL AND o.id < h.id
      AND NOT EXISTS (SELECT 1 FROM held x WHERE x.id = o.id)
) AS held_back
FROM held h
ORDER BY h.id
"""
_HOLD = {
    (by_id, by_age): _HOLD_SQL.format(
        ids="AND id = ANY(%(ids)s)" if by_id else "",
        older="AND created_at <= statement_timestamp() - make_interval(secs => %(older)s)" if by_age else "",
    )
    for by_id in (False, True)
    for by_age in (False, True)
}
_ENDPOINTS_SQL = f"SELECT * FROM {_ENDPOINT} WHERE active AND scope = ANY(%s) ORDER BY created_at"
# The messages (ON CONFLICT DO NOTHING, as bulk_create's ignore_conflicts) and the events' dispatch, together.
_DISPATCH_SQL = f"""
WITH written AS (
    INSERT INTO {_MESSAGE} (id, scope, scope_l1, scope_l2, scope_l3, endpoint_id, event_id, run_id, type, body,
                            status, attempts, next_attempt_at, created_at, delivered_at)
    SELECT id, scope, scope_l1, scope_l2, scope_l3, endpoint_id, event_id, run_id, type, body,
           %(pending)s, 0, %(now)s, %(now)s, NULL
    FROM jsonb_to_recordset(%(messages)s::jsonb) AS x(
        id uuid, scope text, scope_l1 text, scope_l2 text, scope_l3 text, endpoint_id uuid, event_id bigint,
        run_id uuid, type text, body text
    )
    ON CONFLICT DO NOTHING
)
UPDATE {_OUTBOX} SET dispatched_at = %(now)s WHERE id = ANY(%(ids)s)
"""
_MESSAGE_COLUMNS = ("scope", "scope_l1", "scope_l2", "scope_l3", "event_id", "type", "body")


def hold(
    ids: Sequence[int] | None, older_than: timedelta | None, limit: int
) -> tuple[datetime | None, list[OutboxEvent], list[int]]:
    """(the clock, the events to fan out now in id order, the ids held back); no clock when nothing is held."""
    if not claims_sql.enabled():
        now = claims.db_now()
        query = OutboxEvent.objects.filter(dispatched_at__isnull=True)
        if ids is not None:
            query = query.filter(id__in=list(ids))
        if older_than is not None:
            query = query.filter(created_at__lte=now - older_than)
        held = list(query.order_by("created_at").select_for_update(skip_locked=True)[:limit])
        return (now, *_in_run_order(held)) if held else (None, [], [])
    params: dict[str, Any] = {"limit": limit}
    if ids is not None:
        params["ids"] = [int(i) for i in ids]
    if older_than is not None:
        params["older"] = older_than.total_seconds()
    found = list(OutboxEvent.objects.raw(_HOLD[(ids is not None, older_than is not None)], params))
    if not found:
        return None, [], []
    clock: datetime = getattr(found[0], "fanned_at")  # noqa: B009 (the raw statement's own columns)
    ready = [e for e in found if not getattr(e, "held_back")]  # noqa: B009
    return clock, ready, [e.id for e in found if getattr(e, "held_back")]  # noqa: B009


def _in_run_order(held: list[OutboxEvent]) -> tuple[list[OutboxEvent], list[int]]:
    """(events to fan out now in id order, ids held back behind an earlier undispatched event of their run)."""
    held.sort(key=lambda e: e.id)
    runs = {e.run_id for e in held if e.run_id is not None}
    if not runs:
        return held, []
    earlier: dict[Any, int] = {}
    others = (
        OutboxEvent.objects.filter(run_id__in=runs, dispatched_at__isnull=True)
        .exclude(id__in=[e.id for e in held])
        .values_list("run_id", "id")
    )
    for run_id, other in others:
        earlier[run_id] = min(other, earlier.get(run_id, other))
    ready = [e for e in held if e.run_id is None or e.id < earlier.get(e.run_id, e.id + 1)]
    return ready, [e.id for e in held if e not in ready]


def endpoints(wanted: set[str]) -> list[WebhookEndpoint]:
    if claims_sql.enabled():
        return list(WebhookEndpoint.objects.raw(_ENDPOINTS_SQL, [sorted(wanted)]))
    return list(WebhookEndpoint.objects.filter(active=True, scope__in=wanted).order_by("created_at"))


def dispatch(messages: list[Message], events: list[OutboxEvent], now: datetime) -> None:
    if not claims_sql.enabled():
        Message.objects.bulk_create(messages, ignore_conflicts=True)
        OutboxEvent.objects.filter(id__in=[e.id for e in events]).update(dispatched_at=now)
        return
    rows = [
        {
            "id": str(m.id),
            "endpoint_id": str(m.endpoint_id),
            "run_id": None if m.run_id is None else str(m.run_id),
            **{c: getattr(m, c) for c in _MESSAGE_COLUMNS},
        }
        for m in messages
    ]
    params: dict[str, Any] = {"messages": json.dumps(rows), "now": now, "pending": MessageStatus.PENDING.value}
    params["ids"] = [e.id for e in events]
    with connection.cursor() as cursor:
        cursor.execute(_DISPATCH_SQL, params)
