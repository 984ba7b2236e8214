"""The scoped ModelAdmin every admin of this app derives from, and what they share (see __init__)."""

import uuid
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.exceptions import DisallowedModelAdminLookup
from django.contrib.auth.models import Group, User
from django.db import models
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from .. import scopes
from ..presenters import pretty_json_text
from ..principals import for_user
from .bounded import CappedPaginator, RecentValuesFilter, WorkspaceFilter

# Fingerprints of secrets: never displayed, searched or usable as a list filter.
SECRET_FIELDS = frozenset({"token_hash", "decision_token_hash", "secret", "previous_secret"})


def is_staff(request: HttpRequest) -> bool:
    return bool(request.user.is_active and request.user.is_staff)


def is_superuser(request: HttpRequest) -> bool:
    return bool(request.user.is_active and request.user.is_staff and request.user.is_superuser)


def uuid_columns(model: type[models.Model]) -> list[str]:
    """The model's UUID columns, foreign keys to a UUID included (`run_id` of a suspension)."""
    return [
        f.attname for f in model._meta.concrete_fields if isinstance(getattr(f, "target_field", f), models.UUIDField)
    ]


def pretty_json_html(value: Any) -> str:
    """JSON (text or value) indented in a <pre>, escaped; an empty value as a dash."""
    if value in ("", None):
        return "-"
    return format_html('<pre class="json">{}</pre>', pretty_json_text(value))


def json_column(name: str, description: str) -> Callable[[Any, Any], str]:
    """A read-only column showing model field `name` as indented JSON (admin's default is one compact line)."""

    @admin.display(description=description)
    def column(model_admin: Any, obj: Any) -> str:
        return pretty_json_html(getattr(obj, name))

    return column


@admin.display(description="Run")
def run_link(model_admin: Any, obj: Any) -> str:
    """The row's run, linked to the run's admin page (its whole history); evidence keeps the id as a plain column."""
    if obj.run_id is None:
        return "-"
    return format_html('<a href="{}">{}</a>', reverse("admin:suspensions_run_change", args=[obj.run_id]), obj.run_id)


class ScopedAdmin(admin.ModelAdmin):
    """The base of every ModelAdmin of this app: scoped reads, no writes unless `superuser_writes` names them.

    Every part of a list page costs the same whatever the table holds (bounded.py): the count is capped, the
    date column is a filter of fixed links (`date_column`, in place of Django's date hierarchy, which reads every
    row), and a filter on a column without choices lists bounded values.
    """

    list_per_page = 50
    show_full_result_count = False  # no COUNT(*) over the whole table on every list page
    paginator = CappedPaginator
    # The list's date column: filtered by today / past 7 days / this month / this year.
    date_column = ""
    # Which of "add", "change", "delete" a superuser may do here; nobody else writes.
    superuser_writes: tuple[str, ...] = ()

    def get_list_filter(self, request: HttpRequest) -> Any:
        bounded: list[Any] = [bounded_filter(self.model, f) for f in super().get_list_filter(request)]
        if self.date_column:
            bounded.append((self.date_column, admin.DateFieldListFilter))
        return bounded

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if not is_staff(request):
            return queryset.none()
        return queryset.filter(for_user(request.user).scope_q())

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_staff(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return "add" in self.superuser_writes and is_superuser(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return "change" in self.superuser_writes and is_superuser(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return "delete" in self.superuser_writes and is_superuser(request)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [f for f in super().get_fields(request, obj) if f not in SECRET_FIELDS]

    def get_search_fields(self, request: HttpRequest) -> Any:
        return [f for f in super().get_search_fields(request) if f.lstrip("^=@").split("__")[0] not in SECRET_FIELDS]

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        # Django allows any local-field filter in the list URL; on a hash that is an oracle.
        if lookup.split("__")[0] in SECRET_FIELDS:
            raise DisallowedModelAdminLookup(f"Filtering on {lookup} is not allowed.")
        return super().lookup_allowed(lookup, value, request)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """A full UUID, with or without hyphens, also matches every UUID column of the model exactly.

        Django casts the column to text for an `id__exact` search, which
        matches only the hyphenated spelling: comparing UUID values finds the
        row however it was typed (32 hex digits, braces, upper case).
        """
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        try:
            value = uuid.UUID(search_term.strip())
        except ValueError:
            return results, may_have_duplicates
        by_id = Q(pk__in=[])
        for column in uuid_columns(self.model):
            by_id |= Q(**{column: value})
        return queryset.filter(by_id | Q(pk__in=results.values("pk"))), False


def bounded_filter(model: type[models.Model], spec: Any) -> Any:
    """A list filter named by a column without choices, as a bounded one (`scope_l1`: WorkspaceFilter); others as is."""
    if not isinstance(spec, str) or "__" in spec:
        return spec
    field = model._meta.get_field(spec)
    if not isinstance(field, models.CharField) or field.choices:
        return spec
    return (spec, WorkspaceFilter if spec == "scope_l1" else RecentValuesFilter)


class ReadOnlyAdmin(ScopedAdmin):
    """Evidence and state: viewable by every active staff user in its scopes; nobody writes here.

    On a change page the run's id links to the run's page (its whole
    history), and each field named in `shown_as` is shown by the column
    named there instead (JSON indented, a list as a list).
    """

    shown_as: dict[str, str] = {}

    class Media:
        # Indented JSON and the run page's history sections; a <pre> scrolls inside its box on a phone.
        css = {"all": ("suspensions_admin/admin.css",)}

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Nobody may change these rows, so Django shows every listed name read-only, columns included.
        shown = {"run_id": "run_link", **self.shown_as}
        return list(dict.fromkeys(shown.get(f, f) for f in super().get_fields(request, obj)))

    run_link = run_link


def clean_scope(value: str) -> str:
    if not scopes.is_valid(value):
        raise forms.ValidationError("A scope is workspace[/project[/team]], each part [a-z0-9][a-z0-9_-]{0,62}.")
    return value


class SuperuserOnlyAdmin:
    """Users and groups have no scope; a staff user allowed to edit users could make itself a superuser."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_superuser(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_superuser(request)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_superuser(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_superuser(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_superuser(request)


admin.site.unregister(User)
admin.site.unregister(Group)
