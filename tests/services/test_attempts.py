"""A transition tried as one guarded statement without a transaction (claims_sql.attempted), else under the lock.

These run with real commits (transaction=True): inside a test's transaction
every transition goes to the lock, as `attempted` says.
"""

import threading
from typing import Any

import psycopg
import pytest
from django.db import connection

from suspensions import services
from suspensions.exceptions import ResumeAlreadyStarted, VersionConflict
from suspensions.models import Admission, Event, Run, Start, Suspension
from suspensions.observability import metrics
from suspensions.services import claims_sql
from tests.factories import principal
from tests.helpers import call, continuation
from tests.processes import database_url
from tests.services.test_claims_sql import rows, transitions

pytestmark = pytest.mark.django_db(transaction=True)
RESULTS = [{"call_id": "c1", "content": {"ok": True}}]


class Recorder:
    """Every statement Django's cursor runs, with whether the connection was in autocommit (no transaction) then."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bool]] = []
        self.before: Any = None  # called with the SQL before it runs (a concurrent change)

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        self.sent.append((sql, connection.get_autocommit()))
        if self.before is not None:
            self.before(sql)
        return execute(sql, params, many, context)


def paused(engine: Any) -> Suspension:
    run = services.register_run(principal=engine, agent_id="a", scope="acme")
    return services.suspend_run(
        principal=engine, run_id=run.id, revision=1, reason="external_tool", pending=[call()], continuation={}
    )


def version(s: Suspension, revision: int = 2) -> services.Version:
    return services.Version(run_id=s.run_id, suspension_id=s.id, run_revision=revision)


def test_a_fresh_register_pause_and_resume_each_send_one_write_outside_any_transaction():
    engine = principal("token:engine", "acme", "engine")
    record = Recorder()
    with connection.execute_wrapper(record):
        s = paused(engine)
        services.resume_run(principal=engine, run_id=s.run_id, version=version(s), results=RESULTS)
    assert all(autocommit for _, autocommit in record.sent), record.sent  # no BEGIN, no COMMIT
    writes = [sql for sql, _ in record.sent if not sql.startswith("SELECT")]
    assert len(writes) == 3  # register, suspend, resume: one statement each
    guarded = [sql for sql in writes if sql.startswith("WITH g AS (SELECT 1 FROM")]
    assert len(guarded) == 2 and all("FOR NO KEY UPDATE" in sql for sql in guarded)
    reads = [sql for sql, _ in record.sent if sql.startswith("SELECT")]
    assert not any("FOR NO KEY UPDATE" in sql for sql in reads)  # the run is read, not locked
    run = Run.objects.get(pk=s.run_id)
    assert (run.state, run.revision) == ("running", 3)
    assert Start.objects.filter(run_id=run.id).count() == 1
    assert list(Event.objects.filter(run_id=run.id).order_by("id").values_list("kind", flat=True)) == [
        "registered",
        "suspended",
        "admitted",
        "started",
    ]


def test_the_attempts_and_the_lock_leave_the_same_rows_in_no_more_statements(monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(claims_sql, "ATTEMPTS", False)
        locked_costs = transitions("locked")
    attempted_costs = transitions("attempted")
    assert len(attempted_costs) == len(locked_costs)
    locked, attempted = rows("locked"), rows("attempted")
    assert all(locked.values())
    for name in locked:
        assert attempted[name] == locked[name], name
    # (CaptureQueriesContext counts BEGIN and COMMIT too.) A fresh register, pause and resume: the read and the
    # write, without BEGIN and COMMIT. The replay (fourth): the lock's, after the attempt's read. The rest: the lock's.
    assert attempted_costs[:3] == [cost - 2 for cost in locked_costs[:3]]
    assert attempted_costs[3] == locked_costs[3] + 1
    assert all(a in (lock - 2, lock) for a, lock in zip(attempted_costs[4:], locked_costs[4:], strict=True))


def test_a_run_that_moves_between_the_read_and_the_write_is_untouched_and_answered_under_the_lock():
    engine = principal("token:engine", "acme", "engine")
    s = paused(engine)
    other = psycopg.connect(database_url(), autocommit=True)
    record = Recorder()

    def move_it(sql: str) -> None:
        if sql.startswith("WITH g AS") and record.before is not None:
            record.before = None  # once: the lock's own statements go as they come
            other.execute("UPDATE suspensions_run SET revision = revision + 1 WHERE id = %s", [s.run_id])

    record.before = move_it
    try:
        with connection.execute_wrapper(record), pytest.raises(VersionConflict):
            services.resume_run(principal=engine, run_id=s.run_id, version=version(s), results=RESULTS)
    finally:
        other.close()
    assert any(sql.startswith("WITH g AS") for sql, _ in record.sent)
    assert not all(autocommit for _, autocommit in record.sent)  # the answer came from the lock's transaction
    run = Run.objects.get(pk=s.run_id)
    assert (run.state, run.revision) == ("paused", 3)  # only the other connection's change
    assert Suspension.objects.filter(pk=s.id).exists()
    assert not Admission.objects.filter(run_id=run.id).exists()
    assert not Event.objects.filter(run_id=run.id, kind__in=["admitted", "started"]).exists()


def test_a_dropped_attempt_runs_its_commit_hooks_once_from_the_lock_and_a_landed_one_once():
    engine = principal("token:engine", "acme", "engine")
    s = paused(engine)
    counter = metrics.TRANSITIONS.labels(kind="admitted")
    before = counter._value.get()
    services.resume_run(principal=engine, run_id=s.run_id, version=version(s), results=RESULTS)
    assert counter._value.get() == before + 1
    # The replay drops its attempt (no write) and answers from the lock: no transition, no count.
    again = services.resume_run(principal=engine, run_id=s.run_id, version=version(s), results=RESULTS)
    assert not again.fresh and counter._value.get() == before + 1


def test_a_refusal_met_by_the_attempt_is_the_locks_refusal_and_writes_nothing():
    engine = principal("token:engine", "acme", "engine")
    s = paused(engine)
    record = Recorder()
    events = Event.objects.count()
    with connection.execute_wrapper(record), pytest.raises(VersionConflict):
        services.resume_run(principal=engine, run_id=s.run_id, version=version(s, revision=7), results=RESULTS)
    assert not any(sql.startswith("WITH g AS") for sql, _ in record.sent)  # nothing was sent to write
    assert Event.objects.count() == events and not Admission.objects.exists()


def test_an_approval_pause_goes_to_the_lock_at_once():
    engine = principal("token:engine", "acme", "engine")
    run = services.register_run(principal=engine, agent_id="a", scope="acme")
    record = Recorder()
    with connection.execute_wrapper(record):
        services.suspend_run(
            principal=engine,
            run_id=run.id,
            revision=1,
            reason="approval",
            pending=[call()],
            continuation=continuation(),
        )
    reads = [sql for sql, _ in record.sent if sql.startswith("SELECT")]
    assert len(reads) == 1 and "FOR NO KEY UPDATE" in reads[0]  # one lock, no attempt's read before it


def test_two_starts_of_one_admission_pass_the_guard_and_the_second_is_the_locks_already_started():
    engine = principal("token:engine", "acme", "engine", "bus")
    s = services.suspend_run(
        principal=engine,
        run_id=services.register_run(principal=engine, agent_id="a", scope="acme").id,
        revision=1,
        reason="agent_reply",
        pending=[call(reply_with="q1")],
        continuation={},
    )
    claimed = services.admit_reply(principal=engine, run_id=s.run_id, version=version(s), input='"42"', reply_with="q1")
    record = Recorder()
    other: dict[str, Any] = {}

    def start_first(sql: str) -> None:
        if sql.startswith("WITH g AS") and record.before is not None:
            record.before = None

            def start() -> None:
                try:
                    other["claimed"] = services.start_admission(principal=engine, admission_id=claimed.admission.id)
                finally:
                    connection.close()

            thread = threading.Thread(target=start)
            thread.start()
            thread.join()

    record.before = start_first
    with connection.execute_wrapper(record), pytest.raises(ResumeAlreadyStarted):
        services.start_admission(principal=engine, admission_id=claimed.admission.id)
    assert other["claimed"].start is not None  # the other start landed, in its own attempt
    assert Start.objects.filter(admission_id=claimed.admission.id).count() == 1
    assert list(Event.objects.filter(run_id=s.run_id, kind="started").values_list("actor", flat=True)) == [
        "token:engine"
    ]
