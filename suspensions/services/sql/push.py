"""Push's SQL (DESIGN §14): the fan-out's hold and a delivery's claim, one statement each."""

from ...models import OutboxEvent, WebhookEndpoint, WebhookMessage

OUTBOX = OutboxEvent._meta.db_table

# -- the fan-out's hold (services/fan_out_steps.py) ---------------------------------------------

# The held events (locked SKIP LOCKED, oldest first, at most `limit`) in id order, with the statement's
# clock and whether an earlier undispatched event of the run is outside what this call holds (held back).
# That probe reads the run's own entries of outbox_undispatched_run, so a held event costs the same however
# many events of other runs wait (it read all of them before: docs/benchmarks.md, "Soak").
_HOLD_SQL = f"""
WITH held AS (
    SELECT * FROM {OUTBOX}
    WHERE dispatched_at IS NULL {{ids}} {{older}}
    ORDER BY created_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
SELECT h.*, statement_timestamp() AS fanned_at, EXISTS (
    SELECT 1 FROM {OUTBOX} o
    WHERE o.run_id = h.run_id AND o.dispatched_at IS NULL AND o.id < h.id
      AND NOT EXISTS (SELECT 1 FROM held x WHERE x.id = o.id)
) AS held_back
FROM held h
ORDER BY h.id
"""
# By (by id, by age): the hold of some ids, of the events older than some seconds, of both, or of the oldest.
HOLD = {
    (by_id, by_age): _HOLD_SQL.format(
        ids="AND id = ANY(%(ids)s)" if by_id else "",
        older="AND created_at <= statement_timestamp() - make_interval(secs => %(older)s)" if by_age else "",
    )
    for by_id in (False, True)
    for by_age in (False, True)
}


# -- a delivery's claim (services/delivery.py) --------------------------------------------------

MESSAGE, ENDPOINT = WebhookMessage._meta.db_table, WebhookEndpoint._meta.db_table

# The due message (of `id`, or the one due longest) locked SKIP LOCKED OF the message, its lease written,
# and what sending needs returned, with the database clock. Due: pending, its time come, its endpoint
# active, and no earlier message of its run to that endpoint still pending (per-run order). One statement
# is its own transaction in autocommit: the lease is committed before anyone sends.
_CLAIM_SQL = f"""
WITH c AS (
    SELECT m.id FROM {MESSAGE} m JOIN {ENDPOINT} e ON e.id = m.endpoint_id
    WHERE m.status = %(pending)s AND m.next_attempt_at <= statement_timestamp() AND e.active {{only}}
      AND NOT EXISTS (
          SELECT 1 FROM {MESSAGE} p
          WHERE p.endpoint_id = m.endpoint_id AND p.run_id = m.run_id AND p.event_id < m.event_id
            AND p.status = %(pending)s
      )
    ORDER BY m.next_attempt_at
    LIMIT 1
    FOR UPDATE OF m SKIP LOCKED
)
UPDATE {MESSAGE} m SET next_attempt_at = statement_timestamp() + make_interval(secs => %(lease)s)
FROM c, {ENDPOINT} e
WHERE m.id = c.id AND e.id = m.endpoint_id
RETURNING m.id, m.endpoint_id, m.run_id, e.url, e.format, e.secret, e.previous_secret,
          e.previous_secret_expires_at, m.body, statement_timestamp()
"""
CLAIM_ANY_MESSAGE = _CLAIM_SQL.format(only="")
CLAIM_MESSAGE = _CLAIM_SQL.format(only="AND m.id = %(id)s")
