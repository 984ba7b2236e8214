# Every event announces itself (docs/api.md, "Waiting without webhooks"): a BEFORE INSERT trigger on the events
# table stamps the row with its transaction's id (`tx`, xid8) and sends `NOTIFY suspensions_events '<run> <id>'`.
# PostgreSQL delivers a NOTIFY only when its transaction commits, in the same round trip as the commit, so a
# transition pays no extra statement; the waiters' process LISTENs (suspensions/listening.py).
#
# `tx` orders the event stream without loss: event ids are drawn before commit, so two transactions can commit
# their ids out of order, but a row whose tx is older than every transaction still running
# (pg_snapshot_xmin(pg_current_snapshot())) can no longer be preceded by one not yet visible. The stream reads in
# (tx, id) order up to that horizon (suspensions/api/waits.py). The column is not a model field: the ORM never
# writes it (the chain function inserts whole rows, and the trigger fills it), and nothing but the stream reads it.
# Events from before this migration keep tx 0: they are older than any stream's start.

from django.db import migrations

FORWARD = r"""
ALTER TABLE suspensions_event ADD COLUMN tx xid8 NOT NULL DEFAULT '0';
CREATE INDEX suspensions_event_stream ON suspensions_event (tx, id);
CREATE FUNCTION suspensions_announce_event() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.tx := pg_current_xact_id();
    PERFORM pg_notify('suspensions_events', NEW.run_id::text || ' ' || NEW.id::text);
    RETURN NEW;
END
$$;
CREATE TRIGGER suspensions_announce_event BEFORE INSERT ON suspensions_event
    FOR EACH ROW EXECUTE FUNCTION suspensions_announce_event();
"""

BACKWARD = r"""
DROP TRIGGER suspensions_announce_event ON suspensions_event;
DROP FUNCTION suspensions_announce_event();
DROP INDEX suspensions_event_stream;
ALTER TABLE suspensions_event DROP COLUMN tx;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0022_scope_id_indexes"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
