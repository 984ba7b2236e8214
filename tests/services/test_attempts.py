"""A transition tried as one guarded statement without a transaction (attempts.attempted), else under the lock.

These run with real commits (transaction=True): inside a test's transaction
every transition goes to the lock, as `attempted` says.
"""

import json
import threading
from typing import Any

import psycopg
import pytest
from django.db import connection

from suspensions import services
from suspensions.exceptions import NotFound, ResumeAlreadyStarted, VersionConflict
from suspensions.models import Admission, Event, OutboxEvent, Run, Start, Suspension
from suspensions.observability import metrics
from suspensions.services import attempts, outbox
from tests.factories import principal
from tests.helpers import call
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


def paused(engine: Any, reason: str = "external_tool", pending: Any = None, **kwargs: Any) -> Suspension:
    """A registered run paused at revision 2, in scope acme."""
    run = services.register_run(principal=engine, agent_id="a", scope="acme")
    return services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=1,
        reason=reason,
        pending=pending or [call()],
        continuation={},
        **kwargs,
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
        m.setattr(attempts, "ATTEMPTS", False)
        locked_costs = transitions("locked")
    attempted_costs = transitions("attempted")
    assert len(attempted_costs) == len(locked_costs)
    locked, attempted = rows("locked"), rows("attempted")
    assert all(locked.values())
    for name in locked:
        assert attempted[name] == locked[name], name
    # Statements of each transition of `transitions` (CaptureQueriesContext counts BEGIN and COMMIT too): an
    # attempt that lands saves BEGIN and COMMIT (-2), and a vote or a start the reads its one read joins
    # (attempt_reads: the record and the votes, -2; the admission's run, the admission and its start, -3);
    # one that drops costs the lock's plus its one read.
    deltas = [
        *[-2, -2, -2],  # register, pause, resume
        +1,  # the resume's replay: the attempt's read, then the lock's
        *[-2, 0],  # pause again; cancel (locked)
        *[-2, -2],  # register, an approval pause (quorum 2)
        +1,  # the first vote, short of the quorum: the attempt's one read, then the lock's
        *[-4, -5, 0],  # the vote that reaches the quorum; start; complete (locked)
        *[-2, -2, 0, -5, 0],  # register, an agent-reply pause; admit (locked); start; fail (locked)
        *[-2, -2, 0],  # register, an approval pause; deny (locked)
        *[-2, -2, 0],  # register, an approval pause; respond (locked)
    ]
    assert attempted_costs == [cost + delta for cost, delta in zip(locked_costs, deltas, strict=True)]


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


def test_two_starts_of_one_admission_pass_the_guard_and_the_second_is_the_locks_already_started():
    engine = principal("token:engine", "acme", "engine", "bus")
    s = paused(engine, "agent_reply", [call(reply_with="q1")])
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


def test_an_approval_pause_and_its_deciding_vote_each_land_as_one_statement_with_their_outbox_keys(
    monkeypatch, settings
):
    settings.FAN_OUT_WINDOW_MS = 0  # each commit's keys in its own task, at its commit
    sent: list[tuple[str, Any]] = []
    monkeypatch.setattr(outbox.current_app, "send_task", lambda name, args, countdown: sent.append((name, args)))
    engine = principal("token:engine", "acme", "engine")
    record = Recorder()
    with connection.execute_wrapper(record):
        s = paused(engine, "approval")
        decided = services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    assert decided.fresh and all(autocommit for _, autocommit in record.sent)  # no BEGIN, no COMMIT
    writes = [sql for sql, _ in record.sent if not sql.startswith("SELECT")]
    register, *guarded = writes
    assert not register.startswith("WITH g AS")  # a register locks nothing: no guard
    assert len(guarded) == 2 and all(sql.startswith("WITH g AS") and "RETURNING" in sql for sql in guarded)
    ids = list(OutboxEvent.objects.order_by("id").values_list("id", flat=True))
    assert len(ids) == 3  # approval.requested; approval.decided and admission.created
    assert sent == [(outbox.FAN_OUT_TASK, [ids[:1]]), (outbox.FAN_OUT_TASK, [ids[1:]])]
    assert Run.objects.get(pk=s.run_id).revision == 3


def test_a_vote_short_of_the_quorum_is_counted_under_the_lock():
    engine = principal("token:engine", "acme", "engine")
    s = paused(engine, "approval", approval={"quorum": 2})
    record = Recorder()
    with connection.execute_wrapper(record):
        voted = services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    assert voted.votes == 1 and voted.fresh
    assert not any(sql.startswith("WITH g AS") for sql, _ in record.sent)  # the attempt dropped before sending
    assert not all(autocommit for _, autocommit in record.sent)  # the lock's transaction wrote the vote
    assert Event.objects.filter(run_id=s.run_id, kind="voted").count() == 1


def test_a_deciding_vote_whose_run_moved_before_its_write_leaves_no_outbox_row_and_is_the_locks_conflict():
    engine = principal("token:engine", "acme", "engine")
    s = paused(engine, "approval")
    outbox_rows = OutboxEvent.objects.count()
    other = psycopg.connect(database_url(), autocommit=True)
    record = Recorder()

    def move_it(sql: str) -> None:
        if sql.startswith("WITH g AS") and record.before is not None:
            record.before = None
            other.execute("UPDATE suspensions_run SET revision = revision + 1 WHERE id = %s", [s.run_id])

    record.before = move_it
    try:
        with connection.execute_wrapper(record), pytest.raises(VersionConflict):
            services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    finally:
        other.close()
    guarded = [sql for sql, _ in record.sent if sql.startswith("WITH g AS")]
    assert len(guarded) == 1 and "RETURNING" in guarded[0]  # the keyed form, behind its guard
    assert OutboxEvent.objects.count() == outbox_rows  # nothing of the vote was written
    assert not Admission.objects.filter(run_id=s.run_id).exists()
    assert Run.objects.get(pk=s.run_id).state == "paused"


def test_the_vote_that_reaches_a_quorum_of_three_reads_the_record_and_both_earlier_votes_in_its_one_read():
    engine = principal("token:engine", "acme", "engine")
    s = paused(engine, "approval", approval={"quorum": 3})
    for voter in ("user:alice", "user:bob"):  # each short of the quorum: under the lock
        services.approve(principal=principal(voter), suspension_id=s.id, version=version(s))
    record = Recorder()
    with connection.execute_wrapper(record):
        decided = services.approve(principal=principal("user:carol"), suspension_id=s.id, version=version(s))
    assert decided.fresh and all(autocommit for _, autocommit in record.sent)  # landed as an attempt
    (read, write) = [sql for sql, _ in record.sent]
    assert "suspensions_approvalvote" in read and "suspensions_approval" in read and write.startswith("WITH g AS")
    assert decided.admission.input and json.loads(decided.admission.input)["approvers"] == [
        "user:alice",
        "user:bob",
        "user:carol",
    ]


def test_a_start_reads_its_admission_run_pause_and_start_row_in_one_statement_and_refuses_another_scope():
    engine = principal("token:engine", "acme", "engine")
    s = paused(engine, "approval")
    claimed = services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    stranger = principal("token:stranger", "other", "engine")
    with pytest.raises(NotFound):
        services.start_admission(principal=stranger, admission_id=claimed.admission.id)
    assert not Start.objects.filter(admission_id=claimed.admission.id).exists()
    record = Recorder()
    with connection.execute_wrapper(record):
        started = services.start_admission(principal=engine, admission_id=claimed.admission.id)
    assert started.start is not None and all(autocommit for _, autocommit in record.sent)
    (read, write) = [sql for sql, _ in record.sent]
    assert "suspensions_admission" in read and "suspensions_start" in read and "FOR NO KEY UPDATE" not in read
    assert write.startswith("WITH g AS")
    with pytest.raises(ResumeAlreadyStarted):  # the start row the next read joins
        services.start_admission(principal=engine, admission_id=claimed.admission.id)
