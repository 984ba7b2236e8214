"""Notifications (approver emails, Slack messages) read-only; notification routes: superusers add, disable, delete.

Route writes go through services/notification_routes.py, as the API's and the
console's do: the form asks the service's checks first, so a refused route is
a form error and nothing is written.
"""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from ..exceptions import ServiceError
from ..models import ROUTE_EVENT_TYPES, Notification, NotificationRoute, SlackChannel
from ..principals import for_user
from ..services import notification_routes
from .base import ReadOnlyAdmin, ScopedAdmin, SuperuserOnlyAdmin, clean_scope


class NotificationRouteForm(forms.ModelForm):
    event_types = forms.MultipleChoiceField(
        choices=[(t, t) for t in ROUTE_EVENT_TYPES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="None ticked: every approval event.",
    )

    class Meta:
        model = NotificationRoute
        fields = ("scope", "kind", "target", "event_types", "description")

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            notification_routes.check_target(data.get("kind"), data.get("target"), scope=data.get("scope"))
        except ServiceError as exc:
            for field, problems in (exc.extra.get("errors") or {"__all__": [exc.detail]}).items():
                self.add_error(field if field in self.fields else None, " ".join(map(str, problems)))
        return data


@admin.register(NotificationRoute)
class NotificationRouteAdmin(ScopedAdmin):
    form = NotificationRouteForm
    superuser_writes = ("add", "delete")
    list_display = ("target", "kind", "scope", "active", "event_types", "created_by", "created_at")
    list_filter = ("active", "kind", "scope_l1")
    search_fields = ("id__exact", "target", "scope", "description", "created_by")
    actions = ("disable", "enable")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (
            ("scope", "kind", "target", "event_types", "description", "active", "created_by", "created_at")
            if obj
            else ()
        )

    def save_model(self, request: HttpRequest, obj: NotificationRoute, form: Any, change: bool) -> None:
        data = form.cleaned_data
        saved = notification_routes.create_route(
            principal=for_user(request.user),
            scope=data["scope"],
            kind=data["kind"],
            target=data["target"],
            event_types=list(data["event_types"]),
            description=data["description"],
        )
        for field in NotificationRoute._meta.concrete_fields:  # the admin logs and redirects with `obj`
            setattr(obj, field.attname, getattr(saved, field.attname))

    def delete_model(self, request: HttpRequest, obj: NotificationRoute) -> None:
        notification_routes.delete_route(principal=for_user(request.user), route_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[NotificationRoute]) -> None:
        for pk in queryset.values_list("pk", flat=True):
            notification_routes.delete_route(principal=for_user(request.user), route_id=pk)

    @admin.action(description="Disable selected routes", permissions=["delete"])
    def disable(self, request: HttpRequest, queryset: QuerySet[NotificationRoute]) -> None:
        self._set_active(request, queryset, active=False)

    @admin.action(description="Enable selected routes", permissions=["delete"])
    def enable(self, request: HttpRequest, queryset: QuerySet[NotificationRoute]) -> None:
        self._set_active(request, queryset, active=True)

    def _set_active(self, request: HttpRequest, queryset: QuerySet[NotificationRoute], *, active: bool) -> None:
        principal = for_user(request.user)
        for pk in queryset.values_list("pk", flat=True):
            notification_routes.set_active(principal=principal, route_id=pk, active=active)
        self.message_user(request, f"{'Enabled' if active else 'Disabled'} the selected routes.", messages.SUCCESS)


class SlackChannelForm(forms.ModelForm):
    class Meta:
        model = SlackChannel
        fields = ("channel_id", "scope", "note")

    def clean_channel_id(self) -> str:
        value = str(self.cleaned_data["channel_id"]).strip()
        if not notification_routes.SLACK_CHANNEL.fullmatch(value):
            raise forms.ValidationError("A Slack channel id, like C0123ABC (not its #name).")
        return value

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])


@admin.register(SlackChannel)
class SlackChannelAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    """Which Slack channel belongs to which scope (docs/notifications.md): superusers grant and remove.

    Superusers only: the bot can post to every channel it was invited to, of
    any tenant; a grant is what lets a scope's routes post there.
    """

    form = SlackChannelForm
    list_display = ("channel_id", "scope", "note", "created_at")
    search_fields = ("channel_id", "scope", "note")
    readonly_fields = ("created_at",)


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    """Every approver email and Slack message: pending, delivered, or failed (kept, with the last error)."""

    list_display = ("recipient", "channel", "kind", "scope", "status", "attempts", "next_attempt_at", "created_at")
    list_filter = ("status", "channel", "kind", "scope_l1")
    search_fields = ("id__exact", "approval_id__exact", "run_id__exact", "recipient")
    date_column = "created_at"
    fields = (
        "id",
        "approval_id",
        "run_id",
        "event_id",
        "scope",
        "channel",
        "kind",
        "recipient",
        "user",
        "route_id",
        "status",
        "attempts",
        "next_attempt_at",
        "leased_until",
        "last_error",
        "slack_ts",
        "created_at",
        "delivered_at",
    )
    readonly_fields = fields
