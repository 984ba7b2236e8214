"""The database clock: it decides every deadline, the application's clock only displays (STYLE rule 16)."""

from datetime import datetime

from django.db import connection
from django.db.models import DateTimeField, Func


class ClockTimestamp(Func):
    """PostgreSQL's clock at the moment of the statement, read in the statement that locks the run."""

    template = "CLOCK_TIMESTAMP()"
    output_field = DateTimeField()


def db_now() -> datetime:
    """The database clock, for changes that take no run lock (a register, a fan-out, a delivery)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        row = cursor.fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]
