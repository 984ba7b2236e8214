"""Approval floors in the admin: every staff user reads those of their scopes; superusers set, change, delete.

Writes go through services/approval_floors.py, as the API's and the
console's do: the form asks the service's checks first, so a refused floor
is a form error and nothing is written.
"""

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from .. import floors
from ..exceptions import ServiceError
from ..models import ApprovalFloor
from ..principals import for_user
from ..services import approval_floors
from .base import ScopedAdmin, clean_scope


class ApprovalFloorForm(forms.ModelForm):
    on_expiry = forms.MultipleChoiceField(
        choices=[(v, v) for v in floors.ON_EXPIRY],
        widget=forms.CheckboxSelectMultiple,
        help_text="The values a pause may use at its deadline.",
    )

    class Meta:
        model = ApprovalFloor
        fields = ("scope", "quorum", "exclude_requester", "on_expiry", "require_linked_person", "require_escalation")

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        # A new floor's id is set already (uuid7 default): "adding" tells a new one from a saved one.
        adding = self.instance._state.adding
        scope = data.get("scope") if adding else self.instance.scope
        if scope is None or self.errors:
            return data
        try:
            values = approval_floors.check_values({k: data[k] for k in approval_floors.FIELDS if k in data})
            exclude = None if adding else self.instance.pk
            approval_floors.check_floor(scope, {**approval_floors.DEFAULTS, **values}, exclude=exclude)
        except ServiceError as exc:
            for field, problems in (exc.extra.get("errors") or {"__all__": [exc.detail]}).items():
                self.add_error(field if field in self.fields else None, " ".join(map(str, problems)))
        return data


@admin.register(ApprovalFloor)
class ApprovalFloorAdmin(ScopedAdmin):
    form = ApprovalFloorForm
    superuser_writes = ("add", "change", "delete")
    list_display = ("scope", "quorum", "exclude_requester", "on_expiry", "require_linked_person", "updated_at")
    list_filter = ("scope_l1", "require_linked_person")
    search_fields = ("id__exact", "scope", "created_by", "updated_by")
    audit = ("created_by", "created_at", "updated_by", "updated_at")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [*ApprovalFloorForm.Meta.fields, *(self.audit if obj else ())]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # The scope stays: a floor is of one scope; move it by deleting it and setting another.
        return ("scope", *self.audit) if obj else ()

    def save_model(self, request: HttpRequest, obj: ApprovalFloor, form: Any, change: bool) -> None:
        principal = for_user(request.user)
        values = {k: form.cleaned_data[k] for k in approval_floors.FIELDS}
        if change:
            saved = approval_floors.update_floor(principal=principal, floor_id=obj.pk, **values)
        else:
            saved = approval_floors.create_floor(principal=principal, scope=form.cleaned_data["scope"], **values)
        for field in ApprovalFloor._meta.concrete_fields:  # the admin logs and redirects with `obj`
            setattr(obj, field.attname, getattr(saved, field.attname))

    def delete_model(self, request: HttpRequest, obj: ApprovalFloor) -> None:
        approval_floors.delete_floor(principal=for_user(request.user), floor_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ApprovalFloor]) -> None:
        for pk in queryset.values_list("pk", flat=True):
            approval_floors.delete_floor(principal=for_user(request.user), floor_id=pk)
