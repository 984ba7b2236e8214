"""The admin writes times as the console does (suspensions/timefmt.py): 30 Nov 2026, 17:51:50 UTC."""

from suspensions.timefmt import DATETIME_FORMAT

SHORT_DATETIME_FORMAT = DATETIME_FORMAT
__all__ = ["DATETIME_FORMAT", "SHORT_DATETIME_FORMAT"]
