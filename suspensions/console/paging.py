"""Keyset pagination for the console lists: no OFFSET and no COUNT(*), so a page costs the same at any depth."""

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db.models import Q, QuerySet
from django.http import QueryDict


def page_size() -> int:
    return int(getattr(settings, "CONSOLE_PAGE_SIZE", 50))


def deadline_cursor(value: str) -> Q | None:
    """`<deadline ISO>~<id>` -> rows strictly after it in (deadline, id) order; None for a bad cursor."""
    deadline_text, _, id_text = value.partition("~")
    try:
        parsed, pk = datetime.fromisoformat(deadline_text), UUID(id_text)
        if parsed.tzinfo is None:
            return None
        # Normalised here so a cursor near year 1 or 9999 fails now, not inside the query.
        deadline = parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return after_deadline(deadline, pk)


def after_deadline(deadline: datetime, pk: UUID) -> Q:
    """Rows after (deadline, pk) in the inbox's order: the next page, or the approval after a decided one."""
    # (deadline, id) > (d, pk), with `deadline >= d` spelled out so the inbox index can seek to the cursor.
    return Q(deadline__gte=deadline) & (Q(deadline__gt=deadline) | Q(id__gt=pk))


def id_cursor(value: str, descending: bool = True) -> Q | None:
    try:
        pk = UUID(value)
    except ValueError:
        return None
    return Q(pk__lt=pk) if descending else Q(pk__gt=pk)


def page(queryset: QuerySet[Any], after: Q | None) -> tuple[list[Any], bool]:
    """One page (already ordered by the caller) and whether another follows it."""
    size = page_size()
    if after is not None:
        queryset = queryset.filter(after)
    rows = list(queryset[: size + 1])
    return rows[:size], len(rows) > size


def link(params: QueryDict, after: str = "") -> str:
    """The current filters with a new cursor (none: the first page), as a query string."""
    query = params.copy()
    query.pop("after", None)
    if after:
        query["after"] = after
    return "?" + query.urlencode()
