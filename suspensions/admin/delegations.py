"""Delegations in the admin (docs/identity.md, "Delegation"): staff users read those of their scopes; superusers add
them and end them, through the same service as the API and the console.

A delegation is never edited: it is ended (the action) and another made. The
add form asks the service's checks through the service itself: a refused one is
a form error and nothing is written.
"""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import HttpRequest

from ..exceptions import ServiceError
from ..models import Delegation
from ..principals import for_user
from ..services import delegations
from .base import ScopedAdmin, clean_scope, is_superuser


class DelegationForm(forms.ModelForm):
    class Meta:
        model = Delegation
        fields = ("from_user", "to_user", "scope", "starts_at", "ends_at", "reason")

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])


@admin.register(Delegation)
class DelegationAdmin(ScopedAdmin):
    form = DelegationForm
    superuser_writes = ("add",)
    list_display = ("from_user", "to_user", "scope", "starts_at", "ends_at", "ended_at", "ended_by", "reason")
    list_filter = ("scope_l1",)
    search_fields = ("id__exact", "from_user__username", "to_user__username", "scope", "reason")
    date_column = "starts_at"
    readonly_fields = ("created_by", "created_at", "ended_at", "ended_by", "notified_at")
    actions = ("end_now",)
    list_select_related = ("from_user", "to_user")

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        kwargs["queryset"] = get_user_model().objects.filter(is_active=True, is_staff=True).order_by("username")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Delegation, form: Any, change: bool) -> None:
        data = form.cleaned_data
        saved = delegations.create_delegation(
            principal=for_user(request.user),
            from_=data["from_user"].get_username(),
            to=data["to_user"].get_username(),
            scope=data["scope"],
            starts_at=data["starts_at"],
            ends_at=data["ends_at"],
            reason=data.get("reason", ""),
        )
        for field in Delegation._meta.concrete_fields:  # the admin logs and redirects with `obj`
            setattr(obj, field.attname, getattr(saved, field.attname))

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        admin_user = request.user

        class Checked(form):  # type: ignore[misc,valid-type]
            def clean(self) -> dict[str, Any]:
                data = super().clean() or {}
                if self.errors or obj is not None:
                    return data
                try:  # the service's own checks, in a transaction rolled back: nothing is kept
                    delegations.check_new(
                        principal=for_user(admin_user),
                        giver=data["from_user"],
                        taker=data["to_user"],
                        scope=data["scope"],
                        starts_at=data.get("starts_at"),
                        ends_at=data["ends_at"],
                    )
                except ServiceError as exc:
                    for field, problems in (exc.extra.get("errors") or {"__all__": [exc.detail]}).items():
                        name = {"from": "from_user", "to": "to_user"}.get(field, field)
                        self.add_error(name if name in self.fields else None, " ".join(map(str, problems)))
                return data

        return Checked

    @admin.action(description="End the selected delegations now")
    def end_now(self, request: HttpRequest, queryset: QuerySet[Delegation]) -> None:
        if not is_superuser(request):
            messages.error(
                request, "Only a superuser ends delegations here; the people named end theirs in the console."
            )
            return
        for pk in queryset.values_list("pk", flat=True):
            delegations.end_delegation(principal=for_user(request.user), delegation_id=pk)
        messages.success(request, "Ended.")
