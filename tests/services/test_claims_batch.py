"""claims_sql.transition() sends a transition's fixed writes to PostgreSQL together, and never around a read.

Proves: a one-shot resume writes in ONE `WITH ...` statement; a read inside a
transition (ORM, raw cursor) sees the writes kept before it; a refusal raised
inside sends nothing and leaves every row; two writes of one table both land,
in order; outside a transition (or with ORM_ONLY) a write goes at once; a
nested transition shares the outer batch; fixedsql keeps one psycopg cursor
per connection and makes a new one after the connection is closed, and reads times with psycopg's
compiled loader where that gives the same values as Django's; it prepares
nothing by default (PgBouncer in transaction mode) and, opted in, only the
fixed statements, once per connection; and (failing
today, a reported bug) set_rollback(True) inside a transition rolls back quietly, as in atomic().
"""

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from suspensions import fixedsql, services
from suspensions.exceptions import VersionConflict
from suspensions.models import Admission, AdmissionSource, Event, Run, RunState, Start, Suspension
from suspensions.services import claims_sql
from tests import closure_setup
from tests.factories import RunFactory, SuspensionFactory
from tests.helpers import snapshot

pytestmark = pytest.mark.django_db

WRITES = ("INSERT", "UPDATE", "DELETE", "WITH")
RUN_UPDATE = f'UPDATE "{Run._meta.db_table}"'


def statements(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"].strip() for q in queries.captured_queries]


def writes(queries: CaptureQueriesContext) -> list[str]:
    return [s for s in statements(queries) if s.upper().startswith(WRITES)]


def paused() -> tuple[Any, Suspension, services.Version]:
    s = closure_setup.paused(scope="acme")
    return closure_setup.ENGINE, s, services.Version(run_id=s.run_id, suspension_id=s.id, run_revision=2)


def resume(engine: Any, s: Suspension, v: services.Version) -> Any:
    results = [{"call_id": "c1", "content": {"ok": True}}]
    return services.resume_run(principal=engine, run_id=s.run_id, version=v, results=results)


def test_a_one_shot_resume_sends_all_its_writes_in_one_statement():
    engine, s, v = paused()
    with CaptureQueriesContext(connection) as queries:
        claimed = resume(engine, s, v)
    [batched] = [w for w in writes(queries) if w.startswith("WITH")]
    assert writes(queries) == [batched]
    for part in [
        RUN_UPDATE,
        f'INSERT INTO "{Admission._meta.db_table}"',
        f'INSERT INTO "{Start._meta.db_table}"',
        f'INSERT INTO "{Event._meta.db_table}"',
        f'DELETE FROM "{Suspension._meta.db_table}"',
    ]:
        assert batched.count(part) == 1, part
    # ... and every write landed.
    assert Run.objects.values_list("state", "revision").get(pk=s.run_id) == (RunState.RUNNING, 3)
    assert Start.objects.get(run_id=s.run_id).admission_id == claimed.admission.id
    assert not Suspension.objects.filter(pk=s.id).exists()
    assert list(Event.objects.filter(run_id=s.run_id).order_by("id").values_list("kind", flat=True))[-2:] == [
        "admitted",
        "started",
    ]


def test_a_read_inside_a_transition_sees_the_writes_kept_before_it():
    run = RunFactory()
    with claims_sql.transition(), CaptureQueriesContext(connection) as queries:
        claims_sql.update_run(run.id, state=RunState.PAUSED, revision=2, updated_at=timezone.now())
        assert writes(queries) == []  # kept
        assert Run.objects.values_list("state", "revision").get(pk=run.id) == (RunState.PAUSED, 2)
        sent = statements(queries)
        assert sent[0].startswith(RUN_UPDATE) and sent[1].startswith("SELECT")
        claims_sql.update_run(run.id, state=RunState.RUNNING, revision=3, updated_at=timezone.now())
        with connection.cursor() as cursor:
            cursor.execute(f'SELECT state, revision FROM "{Run._meta.db_table}" WHERE id = %s', [run.id])
            assert cursor.fetchone() == (RunState.RUNNING, 3)
        claims_sql.update_run(run.id, revision=4)
        assert claims_sql.first(Run, id=run.id).revision == 4  # the fixed cursor's own reads as well


def test_a_refusal_raised_inside_a_transition_sends_nothing():
    s = SuspensionFactory()
    admission = Admission(
        run_id=s.run_id,
        suspension_id=s.id,
        source=AdmissionSource.ONE_SHOT,
        input="[]",
        request_digest="r" * 64,
        suspension_digest="s" * 64,
        version_revision=2,
        claimed_revision=3,
        actor="token:engine",
        admitted_at=timezone.now(),
    )
    admission.stamp_scope("acme")
    before = snapshot()
    with CaptureQueriesContext(connection) as queries, pytest.raises(VersionConflict, match="stale"):
        with claims_sql.transition():
            claims_sql.update_run(s.run_id, state=RunState.RUNNING, revision=3, updated_at=timezone.now())
            claims_sql.insert([admission])
            claims_sql.delete_pause(s.id)
            raise VersionConflict("stale")
    assert writes(queries) == []
    assert snapshot() == before
    assert claims_sql.BATCH not in claims_sql.db().__dict__
    assert not Admission.objects.filter(pk=admission.id).exists()


def test_two_writes_of_one_table_both_land_in_order():
    a, b = RunFactory(), RunFactory()
    now = timezone.now()
    with CaptureQueriesContext(connection) as queries, claims_sql.transition():
        claims_sql.update_run(a.id, state=RunState.PAUSED, revision=2, updated_at=now)
        claims_sql.update_run(b.id, revision=5)
        claims_sql.update_run(a.id, state=RunState.COMPLETED, revision=3)
    assert [w.count(RUN_UPDATE) for w in writes(queries)] == [1, 1, 1]  # never two in one statement
    assert Run.objects.values_list("state", "revision").get(pk=a.id) == (RunState.COMPLETED, 3)
    assert Run.objects.get(pk=b.id).revision == 5


def test_outside_a_transition_a_write_goes_at_once():
    run = RunFactory()
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        claims_sql.update_run(run.id, revision=7)
        assert len(queries.captured_queries) == 1 and statements(queries)[0].startswith(RUN_UPDATE)
    assert Run.objects.get(pk=run.id).revision == 7


def test_a_nested_transition_shares_the_outer_batch():
    a, b, c = RunFactory(), RunFactory(), RunFactory()
    conn = claims_sql.db()
    with claims_sql.transition():
        outer, wrappers = conn.__dict__[claims_sql.BATCH], list(conn.execute_wrappers)
        claims_sql.update_run(a.id, revision=2)
        with claims_sql.transition():
            assert conn.__dict__[claims_sql.BATCH] is outer and conn.execute_wrappers == wrappers
            claims_sql.update_run(b.id, revision=3)
        with pytest.raises(VersionConflict):  # an inner refusal undoes the inner writes only
            with claims_sql.transition():
                claims_sql.update_run(c.id, revision=4)
                raise VersionConflict("stale")
        assert conn.__dict__[claims_sql.BATCH] is outer
    assert claims_sql.BATCH not in conn.__dict__
    assert dict(Run.objects.filter(pk__in=[a.id, b.id, c.id]).values_list("id", "revision")) == {
        a.id: 2,
        b.id: 3,
        c.id: 1,
    }


@pytest.mark.django_db(transaction=True)  # connection.close() inside the test's atomic block would not reconnect
def test_a_kept_cursor_lives_as_long_as_its_connection():
    text = fixedsql.numbered("SELECT %s::int + 1")
    first = fixedsql.cursor(text).cursor
    raw = connection.connection
    assert fixedsql.cursor(text).cursor is first
    assert isinstance(first, fixedsql.PreparingCursor) and first.connection is raw
    connection.close()  # back to the pool: the next connection may be this one again, or another
    again = fixedsql.cursor(text).cursor
    assert again.connection is connection.connection and (again is first) == (connection.connection is raw)
    raw = connection.connection
    raw.close()  # the connection is lost (a database restart): Django gets another one
    connection.close()
    cursor = fixedsql.cursor(text)
    assert connection.connection is not raw and cursor.cursor.connection is connection.connection
    assert cursor.cursor is not again and cursor.cursor is not first
    assert fixedsql.execute("SELECT %s::int + 1", [41]).fetchone() == (42,)
    assert fixedsql.cursor(text).cursor is cursor.cursor


def test_each_statement_keeps_its_cursor_and_its_loaders():
    """psycopg keeps a cursor's loaders only while it runs the same query object again: one cursor a statement."""
    add, now = "SELECT %s::int + 1, now()", "SELECT now(), %s::text"
    a = fixedsql.execute(add, [1])  # the kept psycopg cursor itself
    assert isinstance(a, fixedsql.PreparingCursor)
    assert a.fetchone()[0] == 2
    loaders = a._tx
    b = fixedsql.execute(now, ["x"])
    assert b.fetchone()[1] == "x"
    assert b is not a
    again = fixedsql.execute(add, [2])
    assert again is a and again.fetchone()[0] == 3
    assert again._tx is loaders  # the same Transformer: nothing built again for this statement


def prepared_statements() -> list[str]:
    with connection.cursor() as c:
        c.execute("SELECT statement FROM pg_prepared_statements ORDER BY prepare_time")
        return [row[0] for row in c.fetchall()]


@pytest.fixture
def opted_in() -> Iterator[None]:
    """This test's connection as DB_PREPARED_STATEMENTS=1 makes every connection (suspensions_project/settings.py).

    Off by default, for PgBouncer in transaction mode (DESIGN §19); an operator whose
    service talks to PostgreSQL directly opts in.
    """
    connection.ensure_connection()
    raw = connection.connection
    before = raw.prepare_threshold
    raw.prepare_threshold = 2**31 - 1
    yield
    raw.prepare_threshold = before


def test_by_default_nothing_is_prepared_so_the_service_can_run_behind_pgbouncer_in_transaction_mode():
    connection.ensure_connection()
    assert connection.connection.prepare_threshold is None  # DB_PREPARED_STATEMENTS unset: off
    engine, s, v = paused()
    with connection.cursor() as c:
        c.execute("DEALLOCATE ALL")
    resume(engine, s, v)
    assert prepared_statements() == []


def test_the_fixed_statements_are_prepared_once_per_connection_and_nothing_else_is(opted_in):
    engine, s, v = paused()
    with connection.cursor() as c:
        c.execute("DEALLOCATE ALL")  # what the set-up prepared does not count
    resume(engine, s, v)
    first = prepared_statements()
    # The resume's two statements: the lock and the combined write, prepared on their first run.
    assert [p.split(" ", 1)[0] for p in first] == ["SELECT", "WITH"], first
    assert "FOR NO KEY UPDATE" in first[0] and 'INSERT INTO "suspensions_start"' in first[1]

    engine, s, v = paused()
    before = prepared_statements()
    resume(engine, s, v)
    # The second resume prepared nothing: PostgreSQL runs the plans it made for the first.
    assert prepared_statements() == before
    # Only fixed statements ($n placeholders) are ever prepared, never the ORM's.
    assert all("$1" in p for p in before), before


def test_a_fixed_statement_nobody_listens_to_still_raises_djangos_errors_and_answers_its_rows():
    import django.db

    assert not connection.queries_logged and not connection.execute_wrappers  # the path without Django's wrapper
    assert fixedsql.execute("SELECT %s::int + 1, %s::text", [41, "x"]).fetchall() == [(42, "x")]
    with pytest.raises(django.db.DataError):  # psycopg's InvalidTextRepresentation, translated as Django does
        fixedsql.execute("SELECT %s::int", ["not a number"])


def test_the_kept_cursors_of_a_connection_are_bounded(monkeypatch):
    monkeypatch.setattr(fixedsql, "MAX_KEPT", 3)
    for n in range(7):
        assert fixedsql.execute(f"SELECT %s::int + {n}", [1]).fetchone() == (1 + n,)
        assert len(fixedsql.db().__dict__["_kept_cursors"][1]) <= 3


def test_orm_only_makes_a_transition_a_plain_atomic(monkeypatch):
    monkeypatch.setattr(claims_sql, "ORM_ONLY", True)
    run = RunFactory()
    with claims_sql.transition(), CaptureQueriesContext(connection) as queries:
        assert claims_sql.BATCH not in claims_sql.db().__dict__
        claims_sql.update_run(run.id, revision=9)
        assert len(writes(queries)) == 1 and writes(queries)[0].startswith(RUN_UPDATE)
    engine, s, v = paused()
    with CaptureQueriesContext(connection) as queries:
        resume(engine, s, v)
    assert writes(queries) and not [w for w in writes(queries) if w.startswith("WITH")]
    assert len(writes(queries)) >= 5  # run, admission, start, pause, events: each on its own
    assert Run.objects.get(pk=run.id).revision == 9 and Start.objects.filter(run_id=s.run_id).exists()


def test_set_rollback_inside_a_transition_rolls_back_quietly_as_in_atomic():
    # FAILS (a Batch bug, reported): the end of transition() sends the waiting writes on a transaction marked
    # for rollback, and Django refuses the statement (TransactionManagementError); with ORM_ONLY this passes.
    run = RunFactory()
    with claims_sql.transition():
        claims_sql.update_run(run.id, revision=9)
        transaction.set_rollback(True)
    assert Run.objects.get(pk=run.id).revision == 1


TIMES = "SELECT now(), CAST(%s AS timestamptz), CAST(%s AS timestamptz), CAST(NULL AS timestamptz)"
TIME_PARAMS = ["2026-12-02 17:16:27.154770+00", "1999-12-31 23:59:59-05"]


def test_a_kept_cursor_reads_times_as_django_reads_them_with_psycopg_s_compiled_loader():
    from datetime import UTC

    from psycopg_binary._psycopg import TimestamptzLoader

    with transaction.atomic():  # one transaction: now() is the same value in both reads
        kept = fixedsql.execute(TIMES, TIME_PARAMS).fetchone()
        with connection.cursor() as c:
            c.execute(TIMES, TIME_PARAMS)
            django = c.fetchone()
    assert kept == django and kept[3] is None
    assert all(value.tzinfo is UTC for value in kept[:3])
    assert kept[2].isoformat() == "2000-01-01T04:59:59+00:00"
    oid = fixedsql.TIMESTAMPTZ
    assert fixedsql.cursor(fixedsql.numbered(TIMES)).cursor.adapters.get_loader(oid, 0) is TimestamptzLoader
    # The connection's own cursors keep Django's loader.
    assert connection.connection.adapters.get_loader(oid, 0) is not TimestamptzLoader


@pytest.mark.django_db(transaction=True)  # a connection of its own, closed at the end
def test_on_a_session_in_another_time_zone_a_kept_cursor_keeps_django_s_loader():
    connection.close()
    connection.ensure_connection()
    try:
        with connection.cursor() as c:
            c.execute("SET TIME ZONE 'Europe/Paris'")
        made = fixedsql.PreparingCursor(connection.connection)
        fixedsql.utc_times(made, connection)
        loader = made.adapters.get_loader(fixedsql.TIMESTAMPTZ, 0)
        assert loader is connection.connection.adapters.get_loader(fixedsql.TIMESTAMPTZ, 0)
        assert "django" in loader.__module__
    finally:
        connection.close()
