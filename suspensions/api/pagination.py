"""Cursor pagination: opaque, bounded, stable under inserts."""

from rest_framework.pagination import CursorPagination


class IdCursorPagination(CursorPagination):
    """Newest first; ids are time-ordered."""

    ordering = "-id"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class OldestFirstPagination(IdCursorPagination):
    ordering = "id"


class DeadlinePagination(IdCursorPagination):
    """Soonest deadline first (no deadline sorts last)."""

    ordering = ("deadline", "id")


class AdmittedAtPagination(IdCursorPagination):
    ordering = ("admitted_at", "id")
