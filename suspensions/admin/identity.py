"""Identity in the admin (docs/identity.md): role mappings (superusers set and delete them, through the same service
as the API and the console), the record of role changes (read-only, for auditors), and who each OpenID subject is
(superusers only, like users)."""

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from ..exceptions import ServiceError
from ..models import OidcIdentity, RoleChange, RoleMapping
from ..principals import for_user
from ..services import role_mappings
from .base import ReadOnlyAdmin, ScopedAdmin, SuperuserOnlyAdmin, clean_scope


class RoleMappingForm(forms.ModelForm):
    role = forms.ChoiceField(choices=[(r, r) for r in role_mappings.MAPPABLE])

    class Meta:
        model = RoleMapping
        fields = ("group", "scope", "role")

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors and RoleMapping.objects.filter(**{k: data[k] for k in self.Meta.fields}).exists():
            self.add_error("group", "This group has this role in this scope already.")
        return data


@admin.register(RoleMapping)
class RoleMappingAdmin(ScopedAdmin):
    """Staff users read the mappings of their scopes; superusers add and delete them (no edit: delete and add)."""

    form = RoleMappingForm
    superuser_writes = ("add", "delete")
    list_display = ("group", "scope", "role", "created_by", "created_at")
    list_filter = ("role", "scope_l1")
    search_fields = ("id__exact", "group", "scope")

    def save_model(self, request: HttpRequest, obj: RoleMapping, form: Any, change: bool) -> None:
        data = form.cleaned_data
        try:
            saved = role_mappings.create_mapping(
                principal=for_user(request.user), group=data["group"], scope=data["scope"], role=data["role"]
            )
        except ServiceError as exc:  # a concurrent twin: the form's check passed, the constraint did not
            raise forms.ValidationError(exc.detail) from exc
        for field in RoleMapping._meta.concrete_fields:  # the admin logs and redirects with `obj`
            setattr(obj, field.attname, getattr(saved, field.attname))

    def delete_model(self, request: HttpRequest, obj: RoleMapping) -> None:
        role_mappings.delete_mapping(principal=for_user(request.user), mapping_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[RoleMapping]) -> None:
        for pk in queryset.values_list("pk", flat=True):
            role_mappings.delete_mapping(principal=for_user(request.user), mapping_id=pk)


@admin.register(RoleChange)
class RoleChangeAdmin(ReadOnlyAdmin):
    """Every provider-given role added or removed: evidence, read by staff users of its scope, written by no one."""

    list_display = ("at", "username", "change", "role", "scope", "by", "cause")
    list_filter = ("change", "role", "scope_l1")
    search_fields = ("username", "scope", "cause")
    date_column = "at"


@admin.register(OidcIdentity)
class OidcIdentityAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    """Which OpenID subject signs in as which user. Superusers only: relinking one is becoming someone else."""

    list_display = ("sub", "issuer", "user", "email", "last_seen_at")
    search_fields = ("sub", "user__username", "email")
    readonly_fields = ("issuer", "sub", "email", "groups", "linked_at", "last_seen_at")
    autocomplete_fields = ("user",)
