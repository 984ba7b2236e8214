"""T9 under concurrency, on PostgreSQL: resumes against sweeps, sweeps against sweeps, real Celery workers.

Backlogs are built with bulk inserts (what a thousand engines would have
written through T2 and T4) so the suite spends its time racing, not setting up.
"""

import os
import random
import signal
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import DateTimeField, ExpressionWrapper, Value

from suspensions import digests, services
from suspensions.clock import ClockTimestamp, db_now
from suspensions.exceptions import NotSuspended, SuspensionExpired
from suspensions.models import (
    Admission,
    AdmissionState,
    Approval,
    ApprovalStatus,
    Event,
    ExpiryReceipt,
    Reason,
    Run,
    RunState,
    Suspension,
)
from suspensions.principals import Principal
from tests import processes
from tests.helpers import call, continuation
from tests.processes import Processes, celery_worker, child_env

# Every run these races move keeps an intact audit chain (docs/auditors.md, "What is recorded"), recomputed from the
# rows: thousands of runs, too many to read one by one through the events API as the other race modules do.
pytestmark = pytest.mark.usefixtures("chains_intact_in_db")

ENGINE = Principal(name="token:engine", grants=(("acme", frozenset({"engine"})),))
KINDS = ("external_tool", "approval", "admitted")
FAR = timedelta(days=365)


def stamped(obj, scope):
    obj.stamp_scope(scope)
    return obj


def bulk_pauses(n, *, due_in, kinds=KINDS, scope="acme"):
    """n pauses cycling through `kinds`, deadlines `due_in` from now, one apart in deadline order.

    Returns {run_id: kind}. "admitted" is an agent-reply pause the bus admitted and nobody started.
    """
    now = db_now()
    pending = digests.canonical([call(reply_with="q-1")]).decode()
    cont = digests.canonical(continuation()).decode()
    runs, pauses, approvals, admissions, by_run = [], [], [], [], {}
    for i in range(n):
        kind = kinds[i % len(kinds)]
        admitted = kind == "admitted"
        reason = Reason.AGENT_REPLY if admitted else kind
        expires_at = now + due_in + timedelta(microseconds=i)
        run = Run(agent_id="bulk", state="running" if admitted else "paused", revision=3 if admitted else 2)
        run.created_at = run.updated_at = now
        stamped(run, scope)
        pause = Suspension(run=run, reason=reason, pending=pending, continuation=cont, tool_names=",refund,")
        pause.expires_at = pause.deadline = expires_at
        pause.created_at = now
        pauses.append(stamped(pause, scope))
        if reason == Reason.APPROVAL:
            approvals.append(stamped(Approval(suspension_id=pause.id, run_id=run.id, created_at=now), scope))
        if admitted:
            admission = Admission(run_id=run.id, suspension_id=pause.id, source="agent_reply", input='"ok"')
            admission.request_digest = admission.suspension_digest = "0" * 64
            admission.version_revision, admission.claimed_revision, admission.actor = 2, 3, "token:bus"
            admission.admitted_at = now
            admissions.append(stamped(admission, scope))
        runs.append(run)
        by_run[run.id] = kind
    for model, rows in ((Run, runs), (Suspension, pauses), (Approval, approvals), (Admission, admissions)):
        model.objects.bulk_create(rows, batch_size=2000)
    return by_run


def check_consistent(by_run):
    """Every run is either expired with all of its evidence exactly once, or untouched. Returns the expired count.

    The test database holds only this test's rows, so whole tables are compared.
    """
    expired = set(Run.objects.filter(state=RunState.EXPIRED).values_list("id", flat=True))
    live = set(Suspension.objects.values_list("run_id", flat=True))
    assert expired.isdisjoint(live)
    assert expired | live == set(by_run)
    events = Counter(Event.objects.filter(kind="expired").values_list("run_id", flat=True))
    assert set(events) == expired and set(events.values()) <= {1}
    revisions = dict(Run.objects.values_list("id", "revision"))
    assert all(revisions[r] == (3 if by_run[r] == "admitted" else 2) + (r in expired) for r in by_run)
    admitted = {r for r, kind in by_run.items() if kind == "admitted"}
    receipts = Counter(ExpiryReceipt.objects.values_list("run_id", flat=True))
    assert set(receipts) == expired & admitted and set(receipts.values()) <= {1}
    ended = set(Admission.objects.filter(state=AdmissionState.EXPIRED).values_list("run_id", flat=True))
    assert ended == expired & admitted
    approvals = {r for r, kind in by_run.items() if kind == "approval"}
    resolved = set(Approval.objects.filter(status=ApprovalStatus.EXPIRED).values_list("run_id", flat=True))
    assert resolved == expired & approvals
    return len(expired)


# -- resume against sweep -----------------------------------------------------------------

TRIALS = 1000
JITTER_US = 3000
# About how long the racers take to wake from the barrier and reach their lock: centres the deadlines on them.
LEAD_US = 3500


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_resume_and_a_sweep_released_together_at_the_deadline_never_both_win_nor_both_lose():
    by_run = bulk_pauses(TRIALS, due_in=FAR, kinds=("external_tool",))
    rows = list(Suspension.objects.filter(run_id__in=list(by_run)).values_list("run_id", "id").order_by("expires_at"))
    go, done = threading.Barrier(3, timeout=60), threading.Barrier(3, timeout=60)
    resumes, errors = {}, []

    def resumer():
        try:
            for run_id, suspension_id in rows:
                go.wait()
                try:
                    services.resume_run(
                        principal=ENGINE,
                        run_id=run_id,
                        version=services.Version(run_id=run_id, suspension_id=suspension_id, run_revision=2),
                        results=[{"call_id": "c1", "content": "late?"}],
                    )
                    resumes[run_id] = "resumed"
                except (SuspensionExpired, NotSuspended) as refusal:
                    resumes[run_id] = refusal.code
                done.wait()
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
            go.abort()
            done.abort()
        finally:
            connection.close()

    def sweeper():
        try:
            for _ in rows:
                go.wait()
                services.expire_suspensions()
                done.wait()
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
            go.abort()
            done.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=resumer), threading.Thread(target=sweeper)]
    for thread in threads:
        thread.start()
    for run_id, _ in rows:
        offset = timedelta(microseconds=random.randint(-JITTER_US, JITTER_US) + LEAD_US)
        deadline = ExpressionWrapper(ClockTimestamp() + Value(offset), output_field=DateTimeField())
        Suspension.objects.filter(run_id=run_id).update(expires_at=deadline)
        go.wait()
        done.wait()
    for thread in threads:
        thread.join()
    assert errors == []
    # A resume refused at the deadline leaves the row due; the next sweep takes it.
    services.expire_suspensions()
    states = dict(Run.objects.filter(pk__in=list(by_run)).values_list("id", "state"))
    assert set(states.values()) <= {RunState.RUNNING, RunState.EXPIRED}
    assert {r for r, state in states.items() if state == RunState.RUNNING} == {
        r for r, outcome in resumes.items() if outcome == "resumed"
    }
    started = Counter(Admission.objects.filter(run_id__in=list(by_run)).values_list("run_id", flat=True))
    expired = Counter(Event.objects.filter(kind="expired").values_list("run_id", flat=True))
    assert set(started.values()) <= {1} and set(expired.values()) <= {1}
    assert set(started).isdisjoint(expired)
    assert set(started) | set(expired) == set(by_run)
    assert not Suspension.objects.filter(run_id__in=list(by_run)).exists()


# -- sweep against sweep --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_over_five_thousand_due_rows_expire_each_row_exactly_once():
    by_run = bulk_pauses(5000, due_in=-timedelta(hours=1))
    barrier = threading.Barrier(2, timeout=60)
    results, errors = [], []

    def sweep():
        try:
            barrier.wait()
            results.append(services.expire_suspensions(batch_size=250))
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    services.expire_suspensions()  # nothing should be left; if something is, it must still be consistent
    assert check_consistent(by_run) == 5000
    assert sum(r.expired for r in results) == 5000
    assert sum(r.receipts for r in results) == sum(1 for kind in by_run.values() if kind == "admitted")


# -- real Celery workers -------------------------------------------------------------------


@pytest.fixture
def workers(transactional_db, tmp_path):
    """start(**env) runs `celery worker --beat` on the test database; every worker is stopped at teardown."""
    procs = Processes()

    def start(**extra_env):
        number = len(procs.started)
        env = child_env(SWEEP_INTERVAL_SECONDS="1", **extra_env)
        return procs.start(
            celery_worker(tmp_path, number, "sweep-test"), env=env, log_path=tmp_path / f"worker-{number}.log"
        )

    yield start
    procs.stop_all()


def wait_for(condition, what, seconds=90):
    """Poll the database until `condition()` holds; a bounded wait, failing the test past it."""
    processes.wait_for(condition, what, seconds=seconds, step=0.01)


def expired_count():
    return Run.objects.filter(state=RunState.EXPIRED).count()


def paused_for_a_second(reason="approval"):
    run = services.register_run(principal=ENGINE, agent_id="agent-1")
    return services.suspend_run(
        principal=ENGINE,
        run_id=run.id,
        revision=1,
        reason=reason,
        pending=[call()],
        continuation=continuation(),
        ttl_seconds=1,
    )


def is_expired(pause):
    return lambda: Run.objects.get(pk=pause.run_id).state == RunState.EXPIRED


@pytest.mark.slow
def test_a_worker_with_beat_expires_a_pause_with_a_one_second_ttl_without_any_manual_call(workers):
    first = paused_for_a_second()
    workers()
    wait_for(is_expired(first), "the first beat sweep")
    # Paused while the worker runs: only a later tick of the beat can expire it.
    pause = paused_for_a_second()
    wait_for(is_expired(pause), "a later beat sweep")
    assert not Suspension.objects.filter(pk=pause.id).exists()
    assert Approval.objects.get(suspension_id=pause.id).status == ApprovalStatus.EXPIRED
    assert list(Event.objects.filter(run_id=pause.run_id, kind="expired").values_list("actor", "revision")) == [
        ("sweeper", 3)
    ]


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_loses_nothing_and_its_successor_expires_every_row_exactly_once(workers):
    total = 20000
    by_run = bulk_pauses(total, due_in=-timedelta(hours=1))
    first = workers(SWEEP_BATCH_SIZE="100")
    wait_for(lambda: expired_count() > 0, "the first committed batch")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    # Whatever was committed is whole; the batch in flight rolled back and is still due.
    at_kill = check_consistent(by_run)
    assert 0 < at_kill < total
    workers(SWEEP_BATCH_SIZE="500")
    wait_for(lambda: not Suspension.objects.exists(), "the restarted sweep")
    assert check_consistent(by_run) == total
