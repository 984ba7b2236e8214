"""Cursor pagination: opaque, bounded, stable under inserts."""

from typing import Any

from rest_framework.pagination import CursorPagination

from ..exceptions import InvalidRequest


class IdCursorPagination(CursorPagination):
    """Newest first; ids are time-ordered."""

    ordering: str | tuple[str, ...] = "-id"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request: Any) -> int:
        # A malformed or out-of-range page_size is a 400, not a silent default or clamp (DESIGN §8's rule for limits).
        raw = request.query_params.get(self.page_size_query_param)
        if raw in (None, ""):
            return self.page_size
        if not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise InvalidRequest(
                f"page_size must be an integer from 1 to {self.max_page_size}",
                errors={"page_size": [f"Must be an integer from 1 to {self.max_page_size}."]},
            )
        return int(raw)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update({"minimum": 1, "maximum": self.max_page_size})
        return parameters


class OldestFirstPagination(IdCursorPagination):
    ordering = "id"


class DeadlinePagination(IdCursorPagination):
    """Soonest deadline first (no deadline sorts last)."""

    ordering = ("deadline", "id")


class AdmittedAtPagination(IdCursorPagination):
    ordering = ("admitted_at", "id")
