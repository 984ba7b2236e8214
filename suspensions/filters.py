"""FilterSets shared by the API lists and the console pages."""

from datetime import timedelta
from typing import Any

import django_filters as filters
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from . import digests, scopes, tags
from .models import Admission, AdmissionState, Approval, ApprovalStatus, Reason, Run, RunState, Suspension


class UtcDateTimeField(filters.fields.IsoDateTimeField):
    """An ISO 8601 time that exists in UTC: 0001-01-01T00:00:00+01:00 is a 400, not an empty page."""

    def to_python(self, value: Any) -> Any:
        moment = super().to_python(value)
        if moment is not None and digests.utc_or_none(moment) is None:
            raise ValidationError("The time falls outside years 1 to 9999 in UTC.", code="invalid")
        return moment


class UtcDateTimeFilter(filters.IsoDateTimeFilter):
    field_class = UtcDateTimeField


class TagsField(forms.Field):
    """`?tag=a&tag=b`: every value of the repeated parameter (an empty one is no filter), each a valid tag."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[str]:
        values = [value] if isinstance(value, str) else list(value or [])
        return [v for v in values if v != ""]

    def validate(self, value: Any) -> None:
        if not tags.valid(value):
            raise ValidationError(tags.RULE, code="invalid")


class TagsFilter(filters.Filter):
    """Rows carrying every tag named (`tags @> ARRAY[...]`, through the GIN index)."""

    field_class = TagsField

    def filter(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        return qs.filter(**{f"{self.field_name}__contains": value}) if value else qs


def filter_scope(queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
    """Rows in `value` or below it (the caller's visibility is applied by the selector)."""
    if not scopes.is_valid(value):
        return queryset.none()
    return queryset.filter(**{f"scope_l{scopes.depth(value)}": value})


class RunFilter(filters.FilterSet):
    state = filters.ChoiceFilter(choices=RunState.choices)
    agent_id = filters.CharFilter()
    reason = filters.ChoiceFilter(field_name="last_reason", choices=Reason.choices)
    scope = filters.CharFilter(method=filter_scope)
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt")
    updated_after = UtcDateTimeFilter(field_name="updated_at", lookup_expr="gte")
    updated_before = UtcDateTimeFilter(field_name="updated_at", lookup_expr="lt")
    tag = TagsFilter(field_name="tags", label="Tag (repeat it: every one must be present)")

    class Meta:
        model = Run
        fields: list[str] = []


class ConsoleRunFilter(RunFilter):
    """The console's runs page: filtered as a person types, like the inbox (issue 38).

    `agent_id` matches part of the name in any case; `q` finds one run by its id in any
    spelling (upper case, no hyphens, braces, `urn:uuid:`). The API's RunFilter stays exact.
    """

    agent_id = filters.CharFilter(lookup_expr="icontains")
    q = filters.UUIDFilter(
        field_name="id", label="Run id", error_messages={"invalid": "Enter a whole run id, as the run page shows it."}
    )


class SuspensionFilter(filters.FilterSet):
    reason = filters.ChoiceFilter(choices=Reason.choices)
    agent_id = filters.CharFilter(field_name="run__agent_id")
    tool = filters.CharFilter(method="filter_tool", label="Pending tool name")
    scope = filters.CharFilter(method=filter_scope)
    expires_before = UtcDateTimeFilter(field_name="expires_at", lookup_expr="lt")
    expires_after = UtcDateTimeFilter(field_name="expires_at", lookup_expr="gte")
    created_after = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt")
    reply_with = filters.CharFilter()
    expiring_within = filters.NumberFilter(method="filter_expiring_within", label="Expiring within N seconds")
    older_than = filters.NumberFilter(method="filter_older_than", label="Paused at least N seconds ago")
    tag = TagsFilter(field_name="tags", label="Tag (repeat it: every one must be present)")
    at_risk = filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_at_risk",
        label="Approvals past 80% of their window (true), or not (false)",
    )

    class Meta:
        model = Suspension
        fields: list[str] = []

    def filter_tool(self, queryset: QuerySet[Suspension], name: str, value: str) -> QuerySet[Suspension]:
        return queryset.filter(tool_names__contains=f",{value},")

    def filter_expiring_within(self, queryset: QuerySet[Suspension], name: str, value: Any) -> QuerySet[Suspension]:
        if value < 0 or value > 10 * 365 * 86400:
            return queryset.none()
        return queryset.filter(expires_at__lt=timezone.now() + timedelta(seconds=float(value)))

    def filter_older_than(self, queryset: QuerySet[Suspension], name: str, value: Any) -> QuerySet[Suspension]:
        if value < 0 or value > 10 * 365 * 86400:
            return queryset.none()
        return queryset.filter(created_at__lte=timezone.now() - timedelta(seconds=float(value)))

    def filter_at_risk(self, queryset: QuerySet[Suspension], name: str, value: str) -> QuerySet[Suspension]:
        risky = at_risk()
        return queryset.filter(risky if value == "true" else ~risky)


def at_risk() -> Exists:
    """A pause whose approval is pending and past 80% of its window (docs/api.md, "`GET /approvals`"): its record's
    `at_risk_at` has passed (the approval_at_risk index)."""
    pending = Approval.objects.filter(
        suspension_id=OuterRef("id"), status=ApprovalStatus.PENDING, at_risk_at__lte=timezone.now()
    )
    return Exists(pending)


class InboxFilter(SuspensionFilter):
    """The console's approval inbox: a person types part of a name, in any case.

    The API keeps exact `agent_id` and `tool` (engines and scripts name what they
    mean); a person searching for "send" or "INFRA" means "contains".
    """

    agent_id = filters.CharFilter(field_name="run__agent_id", lookup_expr="icontains")
    tool = filters.CharFilter(method="filter_tool_contains", label="Part of a pending tool name")

    def filter_tool_contains(self, queryset: QuerySet[Suspension], name: str, value: str) -> QuerySet[Suspension]:
        # tool_names is ",a,b,": a comma would match across two names.
        if "," in value:
            return queryset.none()
        return queryset.filter(tool_names__icontains=value)


class AdmissionFilter(filters.FilterSet):
    state = filters.ChoiceFilter(choices=AdmissionState.choices)
    scope = filters.CharFilter(method=filter_scope)

    class Meta:
        model = Admission
        fields: list[str] = []
