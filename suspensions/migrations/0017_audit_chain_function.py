# docs/auditors.md, "What is recorded": the audit chain's INSERT as one PL/pgSQL function, suspensions_chain_events,
# called by the transition's writes (services/sql/rows.py, Writes.insert_events) and by the sweep
# (services/sql/expiry.py).
#
# Why a function: the chained INSERT (draw the id, read the run's newest hash, hash) planned anew for every
# event was most of what the chain cost PostgreSQL, because the service binds parameters on the client (no
# server-side prepared statements: PgBouncer in transaction mode). PL/pgSQL keeps the plans of the statements
# inside a function per server connection, whoever the client is, so behind a pooler too; the call itself
# is a trivial statement to plan. docs/benchmarks.md, "Audit chain", has the measures.
#
# What it takes: `events`, a JSON array with one item per event, in order: {"row": the whole event row keyed
# by column name (rows.chain_params builds it from Event._meta, every concrete field), "before", "after": the
# canonical text of the event in two pieces around its id (audit.pieces)}. For each item: draw the id, read
# the run's newest hash (64 zeros for its first event), hash, insert, return the row. Each INSERT is a
# statement of its own, so the next event of the same run chains on it: one call chains several events of a
# run. One JSON parameter, because Python's json escapes the pieces' quotes far faster than an array literal
# bound on the client does.
#
# It names no column list: the record is the table's own row type, filled by name from the JSON
# (jsonb_populate_record) and inserted whole, so a field added to Event is written without touching this
# function (a column missing from the JSON would be NULL and fail NOT NULL, loudly). It names the columns it
# computes (id, run_id, prev_hash, hash), the table and the id's sequence; tests/services/test_sql.py reads
# the definition back from PostgreSQL (pg_get_functiondef) and holds it to rows.py and Event._meta.
#
# To change it: a new migration with CREATE OR REPLACE FUNCTION (the same signature; a new signature needs
# a DROP of this one), whose reverse SQL is the definition below, and the same change to rows.py.

from django.db import migrations

CREATE = r"""
CREATE FUNCTION suspensions_chain_events(events jsonb)
RETURNS SETOF suspensions_event
LANGUAGE plpgsql
AS $$
DECLARE
    item jsonb;
    e suspensions_event;
BEGIN
    FOR item IN SELECT jsonb_array_elements(events) LOOP
        e := jsonb_populate_record(NULL::suspensions_event, item -> 'row');
        e.id := nextval('suspensions_event_id_seq');
        e.prev_hash := coalesce(
            (SELECT p.hash FROM suspensions_event p WHERE p.run_id = e.run_id ORDER BY p.id DESC LIMIT 1),
            repeat('0', 64)
        );
        e.hash := encode(
            sha256(convert_to(e.prev_hash || E'\n' || (item ->> 'before') || e.id || (item ->> 'after'), 'UTF8')), 'hex'
        );
        INSERT INTO suspensions_event SELECT e.*;
        RETURN NEXT e;
    END LOOP;
END
$$
"""

DROP = "DROP FUNCTION suspensions_chain_events(jsonb)"


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0016_audit_chain"),
    ]

    operations = [
        migrations.RunSQL(CREATE, DROP),
    ]
