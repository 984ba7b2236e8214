"""Legal holds (docs/auditors.md, "Retention and legal holds"): superusers add and release them, through
services/retention.py as the API does; every staff user sees those of its scopes."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from ..exceptions import ServiceError
from ..models import LegalHold
from ..principals import for_user
from ..services import retention
from .base import ScopedAdmin, clean_scope


class LegalHoldForm(forms.ModelForm):
    scope = forms.CharField(required=False, help_text="Hold every run of this scope and below it; or leave empty.")

    class Meta:
        model = LegalHold
        fields = ("scope", "run_id", "reason")

    def clean_scope(self) -> str | None:
        value = self.cleaned_data["scope"]
        return clean_scope(value) if value else None


@admin.register(LegalHold)
class LegalHoldAdmin(ScopedAdmin):
    form = LegalHoldForm
    superuser_writes = ("add",)
    list_display = ("__str__", "scope", "reason", "created_by", "created_at", "released_at")
    list_filter = ("scope_l1",)
    search_fields = ("id__exact", "scope", "reason", "created_by")
    actions = ("release",)
    date_column = "created_at"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = ("scope", "run_id", "reason", "created_by", "created_at", "released_by", "released_at")
        return fields if obj else ()

    def save_model(self, request: HttpRequest, obj: LegalHold, form: Any, change: bool) -> None:
        data = form.cleaned_data
        try:
            saved = retention.create_hold(
                principal=for_user(request.user), scope=data["scope"], run_id=data["run_id"], reason=data["reason"]
            )
        except ServiceError as exc:  # shown as the form's message; nothing was written
            self.message_user(request, exc.detail, messages.ERROR)
            return
        for field in LegalHold._meta.concrete_fields:  # the admin logs and redirects with `obj`
            setattr(obj, field.attname, getattr(saved, field.attname))

    @admin.action(description="Release selected holds", permissions=["add"])
    def release(self, request: HttpRequest, queryset: QuerySet[LegalHold]) -> None:
        principal = for_user(request.user)
        for pk in queryset.filter(released_at__isnull=True).values_list("pk", flat=True):
            retention.release_hold(principal=principal, hold_id=pk)
        self.message_user(request, "Released the selected holds.", messages.SUCCESS)
