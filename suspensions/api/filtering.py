"""List filters that refuse what they do not know (docs/api.md §9).

django-filter ignores query parameters it has no filter for, so a misspelt
or imagined filter (`GET /admissions?run_id=...`) would answer every row as
if it had matched. Bodies refuse unknown fields; query strings do the same:
400 `invalid_request` naming each unknown parameter, before any query runs.
"""

from collections.abc import Collection
from typing import Any

from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend

from ..exceptions import InvalidRequest


class StrictFilterBackend(DjangoFilterBackend):
    def filter_queryset(self, request: Any, queryset: QuerySet[Any], view: Any) -> QuerySet[Any]:
        known = set()
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is not None:
            known |= set(filterset_class.base_filters)
        paginator = getattr(view, "paginator", None)
        for name in ("cursor_query_param", "page_size_query_param"):
            if getattr(paginator, name, None):
                known.add(getattr(paginator, name))
        refuse_unknown(request.query_params, known)
        return super().filter_queryset(request, queryset, view)


def refuse_unknown(params: Collection[str], known: Collection[str]) -> None:
    """400 invalid_request naming each query parameter not in `known`: the lists' rule, for any GET that reads some."""
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise InvalidRequest(
            f"unknown query parameter(s): {', '.join(unknown)}",
            errors={
                name: [f"Unknown query parameter. Known: {', '.join(sorted(known)) or 'none'}."] for name in unknown
            },
        )
