"""The sweep's heartbeat: the time of the last successful sweep, in the database (DESIGN §17).

Written by the sweep task, read by /readyz and /metrics in any process. The
database clock decides both the time written and the age read.
"""

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from ..models import SweepHeartbeat

ONLY = 1


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
