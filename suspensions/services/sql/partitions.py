"""The events table's monthly partitions (docs/deploy.md, "The events table's partitions"): creating one ahead, and
pruning (docs/auditors.md, "Retention and legal holds"), for services/retention.py.

`suspensions_event_partition(month)` is migration 0026's function: it creates the month's partition, moving
into it first any row of that month the DEFAULT partition took, so a month is created whole. A month's
partition is named `suspensions_event_yYYYYmMM`, which is how pruning reads its range.
"""

import re
from datetime import UTC, date, datetime

from ...models import Event

EVENT = Event._meta.db_table
DEFAULT = f"{EVENT}_default"
MONTH = re.compile(rf"{EVENT}_y(\d{{4}})m(\d{{2}})")

CREATE_MONTH = "SELECT suspensions_event_partition(%s::date)"
PARTITIONS = (
    f"SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '{EVENT}'::regclass"
)
# The runs whose events before the cut are not the first of their chain: a kept event (at or after the cut) has a
# smaller id than their last one before it. Read once per pass, by (run_id, id) on the kept months.
NOT_PREFIXES = (
    f"SELECT p.run_id FROM (SELECT run_id, max(id) AS last FROM {EVENT} WHERE at < %s GROUP BY run_id) p "
    f"WHERE EXISTS (SELECT 1 FROM {EVENT} k WHERE k.run_id = p.run_id AND k.id < p.last AND k.at >= %s)"
)
# Pruning holds this until it commits: a hold made meanwhile waits, and then holds what is left.
LOCK_HOLDS = "LOCK TABLE suspensions_legalhold IN SHARE MODE"
# The kept runs' rows of the pruned months, put back after the months are dropped: with no partition left for
# their month they land in the DEFAULT partition, as they were (the trigger keeps their tx and stays silent).
KEEP = (
    f"CREATE TEMP TABLE suspensions_kept_events ON COMMIT DROP AS "
    f"SELECT * FROM {EVENT} WHERE at < %s AND run_id = ANY(%s::uuid[])"
)
DROP_MONTH = f"ALTER TABLE {EVENT} DETACH PARTITION {{name}}; DROP TABLE {{name}}"
EMPTY_DEFAULT = f"DELETE FROM {DEFAULT} WHERE at < %s"
PUT_BACK = f"INSERT INTO {EVENT} SELECT * FROM suspensions_kept_events; DROP TABLE suspensions_kept_events"


def month_of(name: str) -> date | None:
    """The first day of the month partition `name` holds; None for the DEFAULT partition (or anything else)."""
    found = MONTH.fullmatch(name)
    return date(int(found[1]), int(found[2]), 1) if found else None


def month_end(month: date) -> datetime:
    """The first moment after `month` (UTC): its partition's upper bound."""
    return datetime(month.year + month.month // 12, month.month % 12 + 1, 1, tzinfo=UTC)
