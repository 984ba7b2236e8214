"""Webhook endpoints (disable, enable, delete), messages with their attempts, the outbox: read-only."""

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from ..models import (
    DeliveryAttempt,
    OutboxEvent,
    WebhookEndpoint,
    WebhookMessage,
)
from ..principals import for_user
from ..services import webhooks
from .base import ReadOnlyAdmin, ScopedAdmin, is_staff, json_column


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ScopedAdmin):
    """Superusers disable, enable or delete endpoints; creating one (and its secret) is the console's or the API's.

    Disable and enable go through the same services as the API, so the admin
    never writes an endpoint's state by hand. Deleting one deletes its
    messages and attempts: they are delivery logs, not evidence of a run.
    """

    superuser_writes = ("change", "delete")
    list_display = ("url", "scope", "format", "active", "disabled_reason", "created_by", "created_at")
    list_filter = ("active", "format", "scope_l1")
    search_fields = ("id__exact", "url", "description", "scope", "created_by")
    date_column = "created_at"
    fields = (
        "id",
        "scope",
        "url",
        "event_types",
        "format",
        "active",
        "disabled_reason",
        "description",
        "previous_secret_expires_at",
        "created_by",
        "created_at",
    )
    readonly_fields = fields
    actions = ("disable", "enable")

    @admin.action(description="Disable selected endpoints", permissions=["change"])
    def disable(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        principal = for_user(request.user)
        for pk in queryset.values_list("pk", flat=True):
            webhooks.disable_endpoint(principal=principal, endpoint_id=pk)
        self.message_user(request, "Disabled the selected endpoints.", messages.SUCCESS)

    @admin.action(description="Enable selected endpoints", permissions=["change"])
    def enable(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        principal = for_user(request.user)
        for pk in queryset.values_list("pk", flat=True):
            webhooks.enable_endpoint(principal=principal, endpoint_id=pk)
        self.message_user(request, "Enabled the selected endpoints.", messages.SUCCESS)


class DeliveryAttemptInline(admin.TabularInline):
    """A message's attempts, read-only for every staff user who sees the message."""

    model = DeliveryAttempt
    fields = ("number", "at", "status_code", "error", "duration_ms")
    readonly_fields = fields
    ordering = ("number",)
    extra = 0
    can_delete = False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_staff(request)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(WebhookMessage)
class WebhookMessageAdmin(ReadOnlyAdmin):
    list_display = ("id", "type", "endpoint", "scope", "status", "attempts", "next_attempt_at", "created_at")
    list_filter = ("status", "type", "scope_l1")
    list_select_related = ("endpoint",)
    search_fields = ("id__exact", "endpoint__id__exact", "run_id__exact", "type")
    date_column = "created_at"
    fields = (
        "id",
        "endpoint",
        "scope",
        "type",
        "event_id",
        "run_id",
        "status",
        "attempts",
        "next_attempt_at",
        "created_at",
        "delivered_at",
        "pretty_body",
    )
    readonly_fields = fields
    inlines = (DeliveryAttemptInline,)
    pretty_body = json_column("body", "Body")


@admin.register(OutboxEvent)
class OutboxEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "type", "scope", "run_id", "created_at", "dispatched_at")
    list_filter = ("type", "scope_l1")
    search_fields = ("run_id__exact", "type")
    date_column = "created_at"
    shown_as = {"data": "data_json"}
    data_json = json_column("data", "Data")
