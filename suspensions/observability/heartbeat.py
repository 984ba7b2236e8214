"""The sweep's heartbeat: the time of the last successful sweep, in the database
(docs/api.md, "7.10 Health and schema").

Written by the sweep task; read by /metrics (suspensions_sweep_stale), by
`manage.py sweep_health` (the sweep worker's health check) and, for people
only, by /readyz. The database clock decides both the time written and the
age read.
"""

from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models.functions import Now

from ..models import SweepHeartbeat

ONLY = 1
# A sweep is due every SWEEP_INTERVAL_SECONDS; this many missed in a row means the beat or the sweep's worker is gone.
MISSED_SWEEPS = 3


def beat() -> None:
    """Record a successful sweep now: one UPDATE (one INSERT the very first time)."""
    if SweepHeartbeat.objects.filter(pk=ONLY).update(last_success_at=Now()):
        return
    try:
        with transaction.atomic():
            SweepHeartbeat.objects.create(id=ONLY, last_success_at=Now())
    except IntegrityError:
        # Another sweeper inserted the row between our UPDATE and INSERT: it exists now.
        SweepHeartbeat.objects.filter(pk=ONLY).update(last_success_at=Now())


def last_success() -> tuple[datetime, datetime] | None:
    """(the last successful sweep, the database clock now) in one query; None if no sweep ever succeeded."""
    found = SweepHeartbeat.objects.filter(pk=ONLY).annotate(now=Now()).values_list("last_success_at", "now").first()
    return (found[0], found[1]) if found is not None else None


def status() -> tuple[str, bool]:
    """(what it reads, whether it is fresh): fresh while the last success is within MISSED_SWEEPS intervals.

    No sweep ever reads "never" and is not fresh: a new sweep worker's health
    check waits out its start period for the beat's first sweep (docs/deploy.md).
    """
    allowed = MISSED_SWEEPS * settings.SWEEP_INTERVAL_SECONDS
    try:
        found = last_success()
    except DatabaseError as exc:
        return f"down: {exc.__class__.__name__}", False
    if found is None:
        return "never", False
    age = (found[1] - found[0]).total_seconds()
    if age > allowed:
        return f"stale: last success {int(age)} s ago", False
    return "ok", True
