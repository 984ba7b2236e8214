"""The metrics of docs/api.md, "7.11 Metrics", in the Prometheus text format.

Two kinds:

- counters and histograms that processes write as things happen (claims,
  transitions, sweeps, requests). With PROMETHEUS_MULTIPROC_DIR set in the
  environment of every web and worker process, each process writes its own
  file in that directory and a scrape sums them all (prometheus-client's
  multiprocess mode): gunicorn's workers, Celery's pool children and the ones
  already gone. Without it, a registry of this process only: right for
  runserver and the tests, wrong for several processes.
- gauges read from the database at scrape time (live pauses by reason, the
  oldest pending approval, the approvals at risk, the last successful sweep, the webhook backlog),
  so they are the same whichever process answers. Each walks a bounded part
  of one index, never the table: bench/metrics_scrape.py shows their plans at
  a million pauses.

Counters that follow a database change count on commit: a change that rolls
back counted nothing. The services call the plain functions below; this module
never calls a service.
"""

import functools
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, ParamSpec, TypeVar, get_args

from django.db import DatabaseError, transaction
from django.db.models.functions import Now
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from ..exceptions import (
    AdmissionConflict,
    NotSuspended,
    ResumeAlreadyStarted,
    ServiceError,
    SuspensionExpired,
    VersionConflict,
)

log = logging.getLogger(__name__)

MULTIPROC_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
if MULTIPROC_DIR:
    # prometheus-client opens its files there as soon as a metric exists.
    os.makedirs(MULTIPROC_DIR, exist_ok=True)

# `_created` series double every counter and mean nothing once processes are summed.
disable_created_metrics()
LOCAL = CollectorRegistry()

ClaimKind = Literal["one_shot", "agent_reply", "approval", "respond", "deny", "dispatch", "start"]
ClaimOutcome = Literal["fresh", "replay", "conflict", "expired", "refused"]
CLAIM_KINDS: tuple[str, ...] = get_args(ClaimKind)
CLAIM_OUTCOMES: tuple[str, ...] = get_args(ClaimOutcome)
SWEEP_RUN_OUTCOMES = ("success", "failure")
SWEEP_ROW_OUTCOMES = ("expired", "escalated", "dropped", "failed")
# Live pauses are counted exactly up to this many per reason, then estimated (see _live_pauses).
EXACT_UP_TO = 10_000
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

CLAIMS = Counter("suspensions_claims", "Claims of a pause, by door and outcome.", ["kind", "outcome"], registry=LOCAL)
TRANSITIONS = Counter("suspensions_transitions", "Committed transitions, by event kind.", ["kind"], registry=LOCAL)
SWEEP_RUNS = Counter("suspensions_sweep_runs", "Sweep task runs, by outcome.", ["outcome"], registry=LOCAL)
SWEEP_ROWS = Counter(
    "suspensions_sweep_rows",
    "Due pauses the sweep handled: expired (run expired), dropped (pause of a finished run), failed (kept).",
    ["outcome"],
    registry=LOCAL,
)
SWEEP_SECONDS = Histogram(
    "suspensions_sweep_duration_seconds",
    "Wall time of one sweep task run.",
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300),
    registry=LOCAL,
)
WEBHOOK_OUTCOMES = ("delivered", "retry", "failed", "gone", "stale")
WEBHOOK_DELIVERIES = Counter(
    "suspensions_webhook_deliveries",
    "Webhook delivery attempts, by outcome: delivered (2xx), retry (failed, tried again later), failed (failed, "
    "schedule exhausted), gone (410: endpoint disabled), stale (failed, message already settled elsewhere).",
    ["outcome"],
    registry=LOCAL,
)
REQUEST_SECONDS = Histogram(
    "suspensions_http_request_duration_seconds",
    "Time to answer a request, by route (URL name) and method.",
    ["route", "method"],
    registry=LOCAL,
)
REQUESTS = Counter(
    "suspensions_http_requests",
    "Answered requests, by route, method and status.",
    ["route", "method", "status"],
    registry=LOCAL,
)

# Every series that should read 0 before its first event, so rates and alerts see it from the start.
for _kind in CLAIM_KINDS:
    for _outcome in CLAIM_OUTCOMES:
        CLAIMS.labels(kind=_kind, outcome=_outcome)
for _outcome in SWEEP_RUN_OUTCOMES:
    SWEEP_RUNS.labels(outcome=_outcome)
for _outcome in SWEEP_ROW_OUTCOMES:
    SWEEP_ROWS.labels(outcome=_outcome)
for _outcome in WEBHOOK_OUTCOMES:
    WEBHOOK_DELIVERIES.labels(outcome=_outcome)


# -- what the services call ---------------------------------------------------------


# The long polls and event streams a process holds (suspensions/listening.py), summed over the live processes.
WAITERS = Gauge(
    "suspensions_waiters",
    "Long polls (wait) and event streams (stream) held open, by kind.",
    ["kind"],
    registry=LOCAL,
    multiprocess_mode="livesum",
)


def waiters(kind: Literal["wait", "stream"]) -> Any:
    """The gauge of `kind`, to inc() when a waiter starts and dec() when it ends."""
    return WAITERS.labels(kind=kind)


def transition(kind: str, count: int = 1) -> None:
    """Count `count` transitions of `kind` (the event kind) when the current transaction commits."""
    if count:
        transaction.on_commit(functools.partial(TRANSITIONS.labels(kind=kind).inc, count))


def claim(kind: ClaimKind, outcome: ClaimOutcome) -> None:
    """Count one claim at `kind`'s door.

    A fresh claim counts when its transaction commits. The others wrote
    nothing (a replay) or rolled back (every refusal), so they count at once:
    call them where the refusal is caught, after the rollback.
    """
    if kind not in CLAIM_KINDS or outcome not in CLAIM_OUTCOMES:
        raise ValueError(f"unknown claim kind or outcome: {kind!r}, {outcome!r}")
    counted = CLAIMS.labels(kind=kind, outcome=outcome)
    if outcome == "fresh":
        transaction.on_commit(counted.inc)
    else:
        counted.inc()


def claim_outcome(error: Exception) -> ClaimOutcome:
    """The outcome a claim's refusal counts as: expired (410), conflict (the 409s of a lost race), refused."""
    if isinstance(error, SuspensionExpired):
        return "expired"
    if isinstance(error, (AdmissionConflict, VersionConflict, NotSuspended, ResumeAlreadyStarted)):
        return "conflict"
    return "refused"


P = ParamSpec("P")
R = TypeVar("R")


def counted_claim(kind: ClaimKind) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a claiming service: counts fresh or replay (from the answer's `fresh`) or its refusal."""

    def decorate(service: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(service)
        def counted(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                answer = service(*args, **kwargs)
            except ServiceError as error:
                claim(kind, claim_outcome(error))
                raise
            claim(kind, "fresh" if getattr(answer, "fresh", True) else "replay")
            return answer

        return counted

    return decorate


# -- what the sweep task and the request middleware call -----------------------------------


def sweep_finished(result: Mapping[str, Any], *, seconds: float) -> None:
    """A sweep that ran to its end: its row counts (`SweepResult.as_dict()`), its duration."""
    SWEEP_RUNS.labels(outcome="success").inc()
    for outcome in SWEEP_ROW_OUTCOMES:
        SWEEP_ROWS.labels(outcome=outcome).inc(int(result.get(outcome, 0)))
    SWEEP_SECONDS.observe(seconds)


def sweep_failed(*, seconds: float) -> None:
    SWEEP_RUNS.labels(outcome="failure").inc()
    SWEEP_SECONDS.observe(seconds)


def webhook_delivery(outcome: str) -> None:
    """One recorded delivery attempt (after its transaction committed), by outcome (WEBHOOK_OUTCOMES)."""
    if outcome not in WEBHOOK_OUTCOMES:
        raise ValueError(f"unknown webhook delivery outcome: {outcome!r}")
    WEBHOOK_DELIVERIES.labels(outcome=outcome).inc()


def request_answered(*, route: str, method: str, status: int, seconds: float) -> None:
    method = method if method in METHODS else "other"
    REQUEST_SECONDS.labels(route=route, method=method).observe(seconds)
    REQUESTS.labels(route=route, method=method, status=str(status)).inc()


# -- the scrape ------------------------------------------------------------------------


class DatabaseGauges(Collector):
    """The gauges read at scrape time, each a bounded index walk; absent (a warning logged) if the database is down."""

    def collect(self) -> Iterator[Metric]:
        try:
            gauges = list(_database_gauges())
        except DatabaseError:
            log.warning("metrics: the database gauges could not be read", exc_info=True)
            return
        yield from gauges


def _database_gauges() -> Iterator[Metric]:
    from ..models import Reason, RunState, Suspension, SweepHeartbeat
    from . import heartbeat

    live = GaugeMetricFamily(
        "suspensions_live_pauses",
        f"Live pauses, by reason: exact up to {EXACT_UP_TO}, PostgreSQL's planner estimate above.",
        labels=["reason"],
    )
    for reason in Reason.values:
        live.add_metric([reason], _live_pauses(reason))
    yield live

    # The first row of suspension_oldest (reason, created_at) whose run still waits for a decision.
    oldest = (
        Suspension.objects.filter(reason=Reason.APPROVAL, run__state=RunState.PAUSED)
        .order_by("created_at")
        .annotate(now=Now())
        .values_list("created_at", "now")
        .first()
    )
    age = (oldest[1] - oldest[0]).total_seconds() if oldest else 0.0
    yield GaugeMetricFamily(
        "suspensions_oldest_pending_approval_age_seconds", "Age of the oldest undecided approval; 0 if none.", age
    )

    yield GaugeMetricFamily(
        "suspensions_approvals_at_risk",
        f"Pending approvals past 80% of their window (created to deadline): exact up to {EXACT_UP_TO}, "
        "PostgreSQL's planner estimate above.",
        _approvals_at_risk(),
    )

    yield GaugeMetricFamily(
        "suspensions_webhook_backlog",
        f"Pending webhook messages: exact up to {EXACT_UP_TO}, PostgreSQL's planner estimate above.",
        _webhook_backlog(),
    )

    last = SweepHeartbeat.objects.filter(pk=1).values_list("last_success_at", flat=True).first()
    yield GaugeMetricFamily(
        "suspensions_sweep_last_success_timestamp_seconds",
        "Unix time of the last successful sweep; 0 if none ever succeeded.",
        last.timestamp() if last else 0.0,
    )
    # What /readyz no longer decides (suspensions/health.py): the alert's input, with `manage.py sweep_health`.
    yield GaugeMetricFamily(
        "suspensions_sweep_stale",
        "1 when no sweep succeeded within three sweep intervals (or none ever did), else 0.",
        0.0 if heartbeat.status()[1] else 1.0,
    )


def _webhook_backlog() -> int:
    """Pending webhook messages (due or waiting for a retry): a bounded walk of message_due, as in _live_pauses."""
    from ..models import MessageStatus, WebhookMessage

    pending = WebhookMessage.objects.filter(status=MessageStatus.PENDING)
    walked = pending.order_by("next_attempt_at").values("id")[: EXACT_UP_TO + 1].count()
    if walked <= EXACT_UP_TO:
        return walked
    plan = json.loads(pending.explain(format="json"))
    return max(walked, int(plan[0]["Plan"]["Plan Rows"]))


def _approvals_at_risk() -> int:
    """Pending approvals whose `at_risk_at` has passed: a bounded walk of approval_at_risk, as in _live_pauses."""
    from ..models import Approval, ApprovalStatus

    risky = Approval.objects.filter(status=ApprovalStatus.PENDING, at_risk_at__lte=Now())
    walked = risky.order_by("at_risk_at").values("suspension_id")[: EXACT_UP_TO + 1].count()
    if walked <= EXACT_UP_TO:
        return walked
    plan = json.loads(risky.explain(format="json"))
    return max(walked, int(plan[0]["Plan"]["Plan Rows"]))


def _live_pauses(reason: str) -> int:
    """How many pauses of `reason` are live, without ever reading more than EXACT_UP_TO + 1 index entries.

    Counting a million rows exactly is a scan, whatever index it uses (an
    index-only scan needs a vacuumed table, or PostgreSQL prefers the heap).
    The bounded walk follows suspension_inbox_all (reason, deadline, id) in
    its own order; past the bound the planner's row estimate, which tracks
    the table's current size, is close enough for a gauge.
    """
    from ..models import Suspension

    pauses = Suspension.objects.filter(reason=reason)
    walked = pauses.order_by("deadline", "id").values("id")[: EXACT_UP_TO + 1].count()
    if walked <= EXACT_UP_TO:
        return walked
    plan = json.loads(pauses.explain(format="json"))
    return max(walked, int(plan[0]["Plan"]["Plan Rows"]))


def exposition() -> bytes:
    """The whole scrape: every process's counters (summed when multiprocess) and the database gauges."""
    registry = CollectorRegistry()
    if MULTIPROC_DIR:
        MultiProcessCollector(registry, path=MULTIPROC_DIR)
    else:
        registry.register(LOCAL)
    registry.register(DatabaseGauges())
    return generate_latest(registry)
