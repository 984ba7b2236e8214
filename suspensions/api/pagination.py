"""Cursor pagination: opaque, bounded, stable under inserts."""

from base64 import b64decode
from typing import Any
from urllib import parse

from django.core.exceptions import ValidationError
from django.db import DataError
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination

from ..exceptions import InvalidRequest


def _issued(encoded: str) -> bool:
    try:
        tokens = parse.parse_qs(b64decode(encoded.encode("ascii")).decode("ascii"), keep_blank_values=True)
    except (TypeError, ValueError, UnicodeError):
        return False
    return bool(tokens) and set(tokens) <= {"o", "r", "p"}


def bad_cursor() -> InvalidRequest:
    return InvalidRequest(
        "the cursor is not one this API issued", errors={"cursor": ["Use the `next` or `previous` link as given."]}
    )


class IdCursorPagination(CursorPagination):
    """Newest first; ids are time-ordered."""

    ordering: str | tuple[str, ...] = "-id"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request: Any) -> int:
        # A malformed or out-of-range page_size is a 400, not a silent default or clamp (docs/api.md, "6. Error codes").
        raw = request.query_params.get(self.page_size_query_param)
        if raw in (None, ""):
            return self.page_size
        if not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise InvalidRequest(
                f"page_size must be an integer from 1 to {self.max_page_size}",
                errors={"page_size": [f"Must be an integer from 1 to {self.max_page_size}."]},
            )
        return int(raw)

    def decode_cursor(self, request: Any) -> Cursor | None:
        # DRF answers a tampered cursor with 404; it is a malformed request (400), the page exists.
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise bad_cursor() from None
        # DRF reads any base64 text as a cursor, defaulting what it lacks, so
        # base64("not-a-cursor") would be the first page. A cursor it issued
        # holds only its own keys, and at least one of them.
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is not None and not _issued(encoded):
            raise bad_cursor()
        return cursor

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> list[Any] | None:
        # A well-formed cursor whose position is not a value of the ordering field
        # (an id that is no UUID, a date out of range) fails only when the query is built.
        try:
            return super().paginate_queryset(queryset, request, view)
        except (ValidationError, ValueError, OverflowError, DataError):
            raise bad_cursor() from None

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        # DRF's example links name its /accounts/ demo; the OpenAPI examples show a link of ours.
        paginated = super().get_paginated_response_schema(schema)
        paginated["properties"]["next"]["example"] = "https://suspensions.example/api/v1/runs?cursor=cD0wMWEy"
        paginated["properties"]["previous"]["example"] = None
        return paginated

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
