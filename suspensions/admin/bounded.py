"""The parts of an admin list page whose cost would otherwise grow with the table (docs/performance.md, "At scale").

Django's change list reads the whole table three ways besides the page
itself: its paginator counts every row (`COUNT(*)`), a `date_hierarchy`
reads the first and last date and then every distinct month or day
(`SELECT DISTINCT DATE_TRUNC(...)` over every row: 1.9 s at a million
events, bench/scale.py), and a list filter on a column without choices
lists every distinct value (`SELECT DISTINCT kind`). Here each is bounded:

- `CappedPaginator` counts at most `CAP + 1` rows; past `CAP` the page says
  "more than 10,000" and offers the first `CAP / list_per_page` pages
  (a filter or a search narrows a longer list);
- the date column is a `DateFieldListFilter` (today, past 7 days, this
  month, this year: links computed from the clock, no query), set by
  `ScopedAdmin.date_column` in place of the date hierarchy;
- the workspace filter lists the first `WORKSPACES` workspaces by skipping
  along the table's `scope_l1` index (one probe per workspace listed, not a
  read of every row), a staff user's own workspaces without a query;
- any other column without choices lists the values of its latest
  `RECENT` rows.
"""

from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

from .. import scopes
from ..principals import for_user

CAP = 10_000
WORKSPACES = 30
RECENT = 1_000


class CappedPaginator(Paginator):
    """Counts up to CAP + 1 rows (`SELECT COUNT(*) FROM (... LIMIT CAP + 1)`); `capped` says there were more."""

    cap = CAP

    @cached_property
    def count(self) -> int:  # type: ignore[override]
        rows: QuerySet[Any] = self.object_list  # type: ignore[assignment]  # the admin pages querysets
        found = rows.order_by().values("pk")[: self.cap + 1].count()
        self.capped = found > self.cap
        return min(found, self.cap)

    capped = False


def workspaces_in(model: type[Model], limit: int = WORKSPACES) -> list[str]:
    """The first `limit` distinct workspaces (scope_l1) of `model`'s table, in order, one index probe each.

    A recursive skip along the index every scoped table has leading with scope_l1
    (tests/services/test_indexes.py): each step asks for the least value above the last one.
    """
    table = connection.ops.quote_name(model._meta.db_table)
    sql = f"""
        WITH RECURSIVE w(v) AS (
            (SELECT scope_l1 FROM {table} ORDER BY scope_l1 LIMIT 1)
            UNION ALL
            SELECT (SELECT scope_l1 FROM {table} WHERE scope_l1 > w.v ORDER BY scope_l1 LIMIT 1) FROM w
            WHERE w.v IS NOT NULL
        )
        SELECT v FROM w WHERE v IS NOT NULL LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [limit])
        return [row[0] for row in cursor.fetchall()]


class WorkspaceFilter(admin.AllValuesFieldListFilter):
    """The workspaces to filter on: a staff user's own (no query), a superuser's first WORKSPACES (index skips)."""

    title = "workspace"

    def __init__(
        self, field: Any, request: HttpRequest, params: Any, model: Any, model_admin: Any, field_path: str
    ) -> None:
        super().__init__(field, request, params, model, model_admin, field_path)
        principal = for_user(request.user)
        if principal.superuser:
            found = workspaces_in(model)
        else:
            found = sorted({scopes.levels(held)["scope_l1"] for held in principal.scopes_with()})
        self.lookup_choices = with_selected(found, self.lookup_val)  # type: ignore[assignment]  # iterated only


class RecentValuesFilter(admin.AllValuesFieldListFilter):
    """A column without choices: the distinct values of its latest RECENT visible rows, not of every row."""

    def __init__(
        self, field: Any, request: HttpRequest, params: Any, model: Any, model_admin: Any, field_path: str
    ) -> None:
        super().__init__(field, request, params, model, model_admin, field_path)
        queryset: QuerySet[Any] = model_admin.get_queryset(request)
        latest = queryset.order_by("-pk").values_list(field.name, flat=True)[:RECENT]
        self.lookup_choices = with_selected(sorted(set(latest)), self.lookup_val)  # type: ignore[assignment]


def with_selected(found: list[str], selected: Any) -> list[str]:
    """The choices, with the one in the URL kept (the list shows which filter is on)."""
    values = [v for v in (selected or []) if v not in found]
    return [*found, *values]
