"""How a person reads a time: one format for the console and the admin, always in UTC.

"30 Nov 2026, 17:51:50 UTC", with a relative hint ("in 4 min", "2 h ago") where it
helps. The admin gets the same format through FORMAT_MODULE_PATH (suspensions/formats);
the console through the `when` filter (templatetags/times.py). Wire shapes keep RFC 3339:
this is display only, and the application clock only displays (STYLE rule 16).
"""

import re
from datetime import UTC, datetime

from django.utils import dateformat

# Django's date format syntax: 30 Nov 2026, 17:51:50 UTC.
DATETIME_FORMAT = "j M Y, H:i:s T"

# An RFC 3339 / ISO 8601 time with a zone, as digests.rfc3339 and isoformat() write them inside texts
# (run errors, event data): "2026-11-30T17:51:50.614443Z", "2026-11-30T17:51:50+00:00".
ISO_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})")


def duration(seconds: float) -> str:
    """A short human duration: "42 s", "4 min", "2 h 5 min", "3 d 4 h"."""
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        hours, minutes = divmod(s // 60, 60)
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(s // 3600, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def parse(value: object) -> datetime | None:
    """A datetime, or an ISO text of one with a zone; anything else (naive, malformed) is None."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        return None
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return None


def absolute(moment: datetime) -> str:
    return dateformat.format(moment.astimezone(UTC), DATETIME_FORMAT)


def relative(moment: datetime, now: datetime) -> str:
    """ "in 4 min", "2 h ago", or "just now" within a second."""
    seconds = (moment - now).total_seconds()
    if abs(seconds) < 1:
        return "just now"
    return f"in {duration(seconds)}" if seconds > 0 else f"{duration(-seconds)} ago"


def times_in_text(text: str) -> str:
    """The text with every ISO time inside it written as `absolute` ("expired by its deadline 30 Nov ...")."""

    def readable(match: re.Match[str]) -> str:
        moment = parse(match.group(0))
        return absolute(moment) if moment is not None else match.group(0)

    return ISO_TIME.sub(readable, text)
