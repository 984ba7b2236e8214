"""What the identity provider provisioned (docs/identity.md, "Provisioning (SCIM) and leavers"): SCIM users and
groups, read by superusers only (people carry no scope), written by no one here: the provider owns them, and an edit
here would be undone by its next sync."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from ..models import ScimGroup, ScimUser
from .base import SuperuserOnlyAdmin


class ProvidedAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ScimUser)
class ScimUserAdmin(ProvidedAdmin):
    list_display = ("user", "scim_id", "external_id", "active", "updated_at")
    search_fields = ("user__username", "scim_id", "external_id")
    list_select_related = ("user",)

    @admin.display(boolean=True)
    def active(self, obj: ScimUser) -> bool:
        return bool(obj.user.is_active)


@admin.register(ScimGroup)
class ScimGroupAdmin(ProvidedAdmin):
    list_display = ("display_name", "scim_id", "external_id", "updated_at")
    search_fields = ("display_name", "scim_id", "external_id")
    filter_horizontal = ("members",)
