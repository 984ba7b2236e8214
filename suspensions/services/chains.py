"""Reading the audit chains back (docs/auditors.md, "What is recorded"): each run's events in chain order, a page at a
time, for the verifier (services/audit.py) and for pruning (services/retention.py)."""

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import Q

from ..models import Event

# The columns an event's hash covers, and the rows read a page.
COVERED = ("id", "run_id", "scope", "kind", "actor", "revision", "data", "at", "prev_hash", "hash")
PAGE = 2000


def runs_by_chain(
    scope: str | None, run_id: str | None, *, before: datetime | None = None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Each run's events in (run_id, id) order, in keyset pages of PAGE: memory holds one page and one run.

    `before`: only the events older than it (what pruning would drop).
    """
    events = Event.objects.all() if before is None else Event.objects.filter(at__lt=before)
    if run_id is not None:
        events = events.filter(run_id=run_id)
    if scope is not None:
        events = events.filter(Q(scope=scope) | Q(scope__startswith=scope + "/"))
    after: tuple[Any, ...] = ()
    current: tuple[str | None, list[dict[str, Any]]] = (None, [])
    while True:
        page = events.order_by("run_id", "id")
        if after:
            page = page.filter(Q(run_id__gt=after[0]) | Q(run_id=after[0], id__gt=after[1]))
        rows = list(page.values(*COVERED)[:PAGE])
        for row in rows:
            rid = str(row["run_id"])
            if rid != current[0]:
                if current[0] is not None:
                    yield current[0], current[1]
                current = (rid, [])
            current[1].append(row)
        if len(rows) < PAGE:
            if current[0] is not None:
                yield current[0], current[1]
            return
        after = (rows[-1]["run_id"], rows[-1]["id"])
