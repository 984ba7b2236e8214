"""The soak's checks (bench/soak.py): the drain conditions, and the invariants in the database after it.

Invariants, each a count that must be 0 (SQL over the bench database after
the load drained):

- no pause claimed twice: one admission per pause, one `admitted` event per
  admission and none without one; one start per pause, one `started` event each;
- one event per transition: each run's event kinds, in order, are exactly the
  transitions the driver made for it (tracked client-side), its final state
  is the expected one, no (run, revision, kind) repeats except `voted` and
  `escalated` (they keep the revision), every revision step is +1 for a
  state change and 0 for start, vote and escalation, and the run's revision
  is its last event's;
- every expired pause has its event (exactly one `expired` per expired
  run), every expired admission its expiry receipt (pointing at that
  event), and no pause is left past its deadline;
- no webhook message lost: every outbox event dispatched and fanned out to
  the endpoint, no message failed or pending without an attempt, the
  receiver saw every delivered message id, and a run's messages arrived in
  its event order.
"""

from typing import Any


def sql(query: str, params: list[Any] | dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return list(cursor.fetchall())


def one(query: str, params: list[Any] | dict[str, Any] | None = None) -> int:
    return int(sql(query, params)[0][0])


# -- drain conditions --------------------------------------------------------------------------


def swept_once() -> bool:
    return one("SELECT count(*) FROM suspensions_sweepheartbeat") > 0


def expired_all(run_ids: set[str]) -> bool:
    """No pause is past its deadline (the sweep caught up), and every run left to expire has ended."""
    if one("SELECT count(*) FROM suspensions_suspension WHERE expires_at <= now()"):
        return False
    waiting = sql(
        "SELECT count(*) FROM suspensions_run WHERE id = ANY(%s::uuid[]) AND state IN ('paused', 'running')",
        [list(run_ids)],
    )
    return int(waiting[0][0]) == 0


def delivered_all(receiver: Any) -> bool:
    if one("SELECT count(*) FROM suspensions_outboxevent WHERE dispatched_at IS NULL"):
        return False
    if one("SELECT count(*) FROM suspensions_webhookmessage WHERE status = 'pending'"):
        return False
    return receiver.count() >= one("SELECT count(*) FROM suspensions_webhookmessage WHERE status = 'delivered'")


# -- invariants ----------------------------------------------------------------------------------

CLAIMS = {
    "pauses with more than one admission": """
        SELECT count(*) FROM (SELECT 1 FROM suspensions_admission GROUP BY run_id, suspension_id HAVING count(*) > 1) d""",
    "admissions without exactly one admitted event": """
        SELECT count(*) FROM suspensions_admission a WHERE (SELECT count(*) FROM suspensions_event e
        WHERE e.run_id = a.run_id AND e.kind = 'admitted' AND e.data->>'suspension_id' = a.suspension_id::text) <> 1""",
    "admitted events without an admission": """
        SELECT count(*) FROM suspensions_event e WHERE e.kind = 'admitted' AND NOT EXISTS (SELECT 1
        FROM suspensions_admission a WHERE a.run_id = e.run_id AND a.suspension_id::text = e.data->>'suspension_id')""",
    "pauses started more than once": """
        SELECT count(*) FROM (SELECT 1 FROM suspensions_start GROUP BY run_id, suspension_id HAVING count(*) > 1) d""",
    "starts without exactly one started event": """
        SELECT count(*) FROM suspensions_start s WHERE (SELECT count(*) FROM suspensions_event e
        WHERE e.run_id = s.run_id AND e.kind = 'started' AND e.data->>'suspension_id' = s.suspension_id::text) <> 1""",
}
EVENTS = {
    "(run, revision, kind) repeated (voted, escalated excepted)": """
        SELECT count(*) FROM (SELECT 1 FROM suspensions_event WHERE kind NOT IN ('voted', 'escalated')
        GROUP BY run_id, revision, kind HAVING count(*) > 1) d""",
    "revision steps other than +1 (state change) or 0 (start, vote, escalation)": """
        SELECT count(*) FROM (SELECT kind, revision, lag(revision) OVER w AS prev, row_number() OVER w AS n
        FROM suspensions_event WINDOW w AS (PARTITION BY run_id ORDER BY id)) e
        WHERE (n = 1 AND (kind <> 'registered' OR revision <> 1))
           OR (n > 1 AND kind IN ('started', 'voted', 'escalated') AND revision <> prev)
           OR (n > 1 AND kind NOT IN ('started', 'voted', 'escalated') AND revision <> prev + 1)""",
    "runs whose revision is not their last event's": """
        SELECT count(*) FROM suspensions_run r
        WHERE r.revision <> (SELECT max(e.revision) FROM suspensions_event e WHERE e.run_id = r.id)""",
}
EXPIRY = {
    "expired runs without exactly one expired event": """
        SELECT count(*) FROM suspensions_run r WHERE r.state = 'expired'
        AND (SELECT count(*) FROM suspensions_event e WHERE e.run_id = r.id AND e.kind = 'expired') <> 1""",
    "expired admissions without their expiry receipt": """
        SELECT count(*) FROM suspensions_admission a WHERE a.state = 'expired' AND NOT EXISTS (SELECT 1
        FROM suspensions_expiryreceipt x WHERE x.run_id = a.run_id AND x.suspension_id = a.suspension_id)""",
    "expiry receipts without an expired admission or their expired event": """
        SELECT count(*) FROM suspensions_expiryreceipt x
        WHERE NOT EXISTS (SELECT 1 FROM suspensions_admission a WHERE a.run_id = x.run_id
                          AND a.suspension_id = x.suspension_id AND a.state = 'expired')
           OR NOT EXISTS (SELECT 1 FROM suspensions_event e WHERE e.id = x.event_id AND e.run_id = x.run_id
                          AND e.kind = 'expired')""",
    "pauses still live past their deadline": "SELECT count(*) FROM suspensions_suspension WHERE expires_at <= now()",
}
PUSH = {
    "outbox events not dispatched": "SELECT count(*) FROM suspensions_outboxevent WHERE dispatched_at IS NULL",
    "outbox events without their message to the endpoint": """
        SELECT count(*) FROM suspensions_outboxevent o WHERE NOT EXISTS (SELECT 1 FROM suspensions_webhookmessage m
        WHERE m.event_id = o.id AND m.endpoint_id = %(endpoint)s::uuid)""",
    "messages failed": "SELECT count(*) FROM suspensions_webhookmessage WHERE status = 'failed'",
    "messages pending with no attempt": """
        SELECT count(*) FROM suspensions_webhookmessage WHERE status = 'pending' AND attempts = 0""",
}


def invariants(book: Any, receiver: Any, endpoint_id: str) -> dict[str, dict[str, int]]:
    """Each group of checks: name -> count of violations (0 is the invariant holding)."""
    out: dict[str, dict[str, int]] = {}
    for group, checks in (("claims", CLAIMS), ("events", EVENTS), ("expiry", EXPIRY), ("push", PUSH)):
        out[group] = {name: one(query, {"endpoint": endpoint_id}) for name, query in checks.items()}
    out["events"].update(per_run(book))
    out["push"].update(receipts(receiver, endpoint_id))
    return out


def per_run(book: Any) -> dict[str, int]:
    """Each run's events against the transitions the driver made for it, and its final state."""
    rows = sql(
        "SELECT e.run_id::text, array_agg(e.kind ORDER BY e.id), r.state FROM suspensions_event e "
        "JOIN suspensions_run r ON r.id = e.run_id GROUP BY e.run_id, r.state"
    )
    actual = {run_id: (list(kinds), state) for run_id, kinds, state in rows}
    wrong = [run_id for run_id, expected in book.expected.items() if actual.get(run_id) != (expected[0], expected[1])]
    for run_id in wrong[:3]:
        print(f"run {run_id}: expected {book.expected[run_id]}, found {actual.get(run_id)}", flush=True)
    unaccounted = set(actual) - set(book.expected) - set(book.abandoned)
    return {
        "runs whose events or final state differ from the driver's transitions": len(wrong),
        "runs in the database the driver does not know": len(unaccounted),
    }


def receipts(receiver: Any, endpoint_id: str) -> dict[str, int]:
    """What the receiver saw against the messages the database says were delivered."""
    rows = sql(
        "SELECT id::text, run_id::text, event_id, status FROM suspensions_webhookmessage WHERE endpoint_id = %s::uuid",
        [endpoint_id],
    )
    with receiver.lock:
        arrived = {key: at for key, (at, _data) in receiver.arrived.items()}
    unseen = sum(1 for mid, _run, _event, status in rows if status == "delivered" and mid not in arrived)
    by_run: dict[str, list[tuple[int, float]]] = {}
    for mid, run_id, event_id, _status in rows:
        if mid in arrived and run_id is not None:
            by_run.setdefault(run_id, []).append((event_id, arrived[mid]))
    out_of_order = sum(
        1 for seen in by_run.values() if [at for _e, at in sorted(seen)] != sorted(at for _e, at in seen)
    )
    return {
        "delivered messages the receiver never saw": unseen,
        "runs whose messages arrived out of event order": out_of_order,
    }
