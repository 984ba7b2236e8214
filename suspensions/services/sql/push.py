"""Push's SQL (docs/api.md, "8. Push: webhooks"): the fan-out's hold, a delivery batch's claim and its record, one
statement each."""

from ...models import DeliveryAttempt, MessageStatus, OutboxEvent, WebhookEndpoint, WebhookMessage

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


# -- a delivery's claim and its record (services/delivery.py) ---------------------------------

MESSAGE, ENDPOINT = WebhookMessage._meta.db_table, WebhookEndpoint._meta.db_table
ATTEMPT = DeliveryAttempt._meta.db_table

# Up to `limit` due messages of ONE endpoint (or the one message `id`), locked SKIP LOCKED OF the message, in
# one statement (its own transaction in autocommit: the lease is committed before anyone sends). Due: pending,
# its time come, its endpoint active, and no earlier message of its run to that endpoint still pending, so a
# batch holds at most one message of a run and the run's order is kept. Each is leased and its attempt counted
# here, before the send: the attempt row says `in_flight` until the send's outcome replaces it, and a later
# claim of the message (its lease ran out: the worker died, or overran) turns it into `lost`. Returns what
# sending needs, the endpoint's columns on every row, in event order, with the database clock and the message's
# trace context.
#
# The probe for a run's earlier pending message names pending as "none of the other statuses" (NOT_PENDING), not
# `status = 'pending'`: that equality matches message_due's predicate, which lets the planner read the probe as a
# scan of every pending message joined by a filter, re-read for each candidate. On statistics that saw no pending
# message (ANALYZE at rest, before a backlog; autovacuum late or off) the planner believes message_due empty and
# takes that plan: 36 million rows filtered, 42 s a claim in the soak (issue 50, item 11). Said this way, only
# message_run_order can serve the probe, per run, whatever the statistics (tests/push/test_claim_plans.py).
NOT_PENDING = [status.value for status in MessageStatus if status != MessageStatus.PENDING]
_CLAIM_SQL = f"""
WITH c AS (
    SELECT m.id FROM {MESSAGE} m JOIN {ENDPOINT} e ON e.id = m.endpoint_id
    WHERE m.status = %(pending)s AND m.next_attempt_at <= statement_timestamp() AND e.active {{only}}
      AND NOT EXISTS (
          SELECT 1 FROM {MESSAGE} p
          WHERE p.endpoint_id = m.endpoint_id AND p.run_id = m.run_id AND p.event_id < m.event_id
            AND p.status <> ALL(%(not_pending)s)
      )
    ORDER BY m.next_attempt_at
    LIMIT %(limit)s
    FOR UPDATE OF m SKIP LOCKED
), lost AS (
    UPDATE {ATTEMPT} a SET error = %(lost)s
    FROM c WHERE a.message_id = c.id AND a.status_code IS NULL AND a.error = %(in_flight)s
), leased AS (
    UPDATE {MESSAGE} m
    SET next_attempt_at = statement_timestamp() + make_interval(secs => %(lease)s), attempts = m.attempts + 1
    FROM c WHERE m.id = c.id
    RETURNING m.id, m.endpoint_id, m.run_id, m.event_id, m.body, m.attempts, m.traceparent
), tried AS (
    INSERT INTO {ATTEMPT} (message_id, number, at, status_code, error, duration_ms)
    SELECT id, attempts, statement_timestamp(), NULL, %(in_flight)s, 0 FROM leased
)
SELECT l.id, l.endpoint_id, l.run_id, l.body, l.attempts, e.url, e.format, e.secret, e.previous_secret,
       e.previous_secret_expires_at, statement_timestamp(), l.traceparent, e.notify_headers
FROM leased l JOIN {ENDPOINT} e ON e.id = l.endpoint_id
ORDER BY l.event_id
"""
CLAIM_OF_ENDPOINT = _CLAIM_SQL.format(only="AND m.endpoint_id = %(endpoint)s")
CLAIM_MESSAGE = _CLAIM_SQL.format(only="AND m.id = %(id)s")

# A sent batch recorded and settled, one statement. Per message (arrays in step): its attempt `number` (the
# claim's), the answer (status code or NULL, error, duration) and `outcome`: delivered, retry (due again after
# `wait` seconds), failed (past the schedule), gone (410: failed; the caller disables the endpoint), or unsent
# (the batch stopped before it: the claim's attempt is taken back and it waits `wait` seconds, with the one that
# got no answer). A message is settled only by the attempt that holds it (its `attempts` is that number and it is
# still pending), or by any 2xx: the receiver has it. Returns the ids settled; the others were stale.
RECORD = f"""
WITH v AS (
    SELECT * FROM unnest(
        %(ids)s::uuid[], %(numbers)s::int[], %(codes)s::int[], %(errors)s::text[], %(durations)s::int[],
        %(outcomes)s::text[], %(waits)s::float8[]
    ) AS v(id, number, status_code, error, duration_ms, outcome, wait)
), held AS (
    SELECT v.* FROM v JOIN {MESSAGE} m ON m.id = v.id
    WHERE v.outcome = 'delivered' OR (m.status = %(pending)s AND m.attempts = v.number)
), recorded AS (
    UPDATE {ATTEMPT} a SET status_code = v.status_code, error = v.error, duration_ms = v.duration_ms
    FROM v WHERE a.message_id = v.id AND a.number = v.number AND v.outcome <> 'unsent'
), taken_back AS (
    DELETE FROM {ATTEMPT} a USING held v WHERE a.message_id = v.id AND a.number = v.number AND v.outcome = 'unsent'
)
UPDATE {MESSAGE} m SET
    status = CASE WHEN v.outcome = 'delivered' THEN %(delivered)s
                  WHEN v.outcome IN ('failed', 'gone') THEN %(failed)s ELSE m.status END,
    delivered_at = CASE WHEN v.outcome = 'delivered' THEN statement_timestamp() ELSE m.delivered_at END,
    next_attempt_at = CASE WHEN v.outcome IN ('retry', 'unsent')
                           THEN statement_timestamp() + make_interval(secs => v.wait) ELSE m.next_attempt_at END,
    attempts = CASE WHEN v.outcome = 'unsent' THEN m.attempts - 1 ELSE m.attempts END
FROM held v
WHERE m.id = v.id
RETURNING m.id
"""
