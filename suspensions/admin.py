"""Django admin for auditors and admins (DESIGN §11, §16).

Every registered ModelAdmin of this app derives from `ScopedAdmin`:

- A staff user sees only rows of the scopes where they hold a membership
  (any role), through `Principal.scope_q()` in `get_queryset`, so an
  out-of-scope row is missing from every list and its change page answers
  like a deleted one. Superusers see everything; an inactive or non-staff
  user sees nothing.
- Evidence and state rows are read-only here, superusers included: state
  changes only through the services, and evidence is never edited.
- Tokens and memberships are written (created, revoked, edited) by superusers
  only. A membership role is a power over runs, not over access: letting an
  operator mint tokens or grant memberships would let them widen their own
  powers. Staff users see the tokens and memberships of their scopes.
- Secret material (token hashes, decision-token hashes, webhook signing
  secrets) is never shown, searched or filterable.
- Webhook endpoints are created where their secret can be shown once (the
  console and the API); here superusers disable, enable or delete them, and
  messages and the outbox are read-only.
- Users and groups carry no scope: superusers only.
"""

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.exceptions import DisallowedModelAdminLookup
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db import models
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.html import format_html

from . import scopes
from .console.present import pretty_json_text
from .models import (
    Admission,
    ApiToken,
    Approval,
    ClosureReceipt,
    DeliveryAttempt,
    Event,
    ExpiryReceipt,
    FlowWait,
    Membership,
    OutboxEvent,
    Role,
    Run,
    Start,
    Suspension,
    WebhookEndpoint,
    WebhookMessage,
)
from .principals import for_user
from .services import webhooks
from .tokens import create_token

admin.site.site_header = "Suspensions admin"
admin.site.site_title = "Suspensions admin"
admin.site.index_title = "Runs, pauses, evidence and access"

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


class ScopedAdmin(admin.ModelAdmin):
    """The base of every ModelAdmin of this app: scoped reads, no writes unless `superuser_writes` names them."""

    list_per_page = 50
    show_full_result_count = False  # no COUNT(*) over the whole table on every list page
    # Which of "add", "change", "delete" a superuser may do here; nobody else writes.
    superuser_writes: tuple[str, ...] = ()

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

        Django casts the column to text for an `id__exact` search, and the
        text differs by database (32 hex digits on SQLite, hyphenated on
        PostgreSQL): comparing UUID values finds the row on both.
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


class ReadOnlyAdmin(ScopedAdmin):
    """Evidence and state: viewable by every active staff user in its scopes; nobody writes here."""


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("id", "agent_id", "scope", "state", "revision", "last_reason", "updated_at")
    list_filter = ("state", "last_reason", "scope_l1")
    search_fields = ("id__exact", "agent_id", "session_id", "scope")
    date_hierarchy = "created_at"


@admin.register(Suspension)
class SuspensionAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "scope", "reason", "expires_at", "created_at")
    list_filter = ("reason", "scope_l1")
    search_fields = ("id__exact", "run__id__exact", "tool_names", "reply_with", "scope")
    date_hierarchy = "created_at"


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = ("suspension_id", "agent_id", "scope", "status", "decided_by", "created_at", "resolved_at")
    list_filter = ("status", "scope_l1")
    search_fields = ("suspension_id__exact", "run_id__exact", "agent_id", "requested_by", "decided_by", "note")
    date_hierarchy = "created_at"
    # What was asked and how it was decided: the pause itself is gone after a deny or a start.
    fields = (
        "suspension_id",
        "run_id",
        "scope",
        "agent_id",
        "requested_by",
        "created_at",
        "expires_at",
        "pending_calls",
        "status",
        "decided_by",
        "note",
        "resolved_at",
    )
    readonly_fields = ("pending_calls",)

    @admin.display(description="Pending calls")
    def pending_calls(self, obj: Approval) -> str:
        return format_html("<pre>{}</pre>", pretty_json_text(obj.pending))


@admin.register(Admission)
class AdmissionAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "scope", "source", "state", "actor", "claimed_revision", "admitted_at")
    list_filter = ("state", "source", "scope_l1")
    search_fields = ("id__exact", "run_id__exact", "suspension_id__exact", "request_digest", "actor")
    date_hierarchy = "admitted_at"


@admin.register(Start)
class StartAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "scope", "run_revision", "actor", "started_at")
    list_filter = ("scope_l1",)
    search_fields = ("id__exact", "run_id__exact", "admission_id__exact", "digest", "request_digest", "actor")
    date_hierarchy = "started_at"


@admin.register(ExpiryReceipt)
class ExpiryReceiptAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "suspension_id", "scope", "run_revision", "expired_at")
    list_filter = ("scope_l1",)
    search_fields = ("run_id__exact", "suspension_id__exact", "digest", "request_digest")
    date_hierarchy = "expired_at"


@admin.register(ClosureReceipt)
class ClosureReceiptAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "suspension_id", "scope", "actor", "run_revision", "closed_at")
    list_filter = ("scope_l1",)
    search_fields = ("run_id__exact", "suspension_id__exact", "digest", "request_digest", "actor")
    date_hierarchy = "closed_at"


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "scope", "kind", "actor", "revision", "at")
    list_filter = ("kind", "scope_l1")
    search_fields = ("run_id__exact", "actor", "kind")
    date_hierarchy = "at"


@admin.register(FlowWait)
class FlowWaitAdmin(ReadOnlyAdmin):
    # The decision token hash is left out (by ScopedAdmin): a secret's fingerprint, not evidence to browse.
    list_display = ("id", "scope", "pack", "flow", "store_key", "run_id", "live", "created_at")
    list_filter = ("live", "scope_l1")
    search_fields = ("store_key", "correlation_id", "run_id__exact", "suspension_id__exact")
    date_hierarchy = "created_at"


def clean_scope(value: str) -> str:
    if not scopes.is_valid(value):
        raise forms.ValidationError("A scope is workspace[/project[/team]], each part [a-z0-9][a-z0-9_-]{0,62}.")
    return value


class TokenAddForm(forms.ModelForm):
    """Only what a new token needs; the secret is generated on save and never stored."""

    scope = forms.CharField(max_length=192, help_text="workspace[/project[/team]]")
    role_set = forms.MultipleChoiceField(
        label="Roles", choices=Role.choices, widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta:
        model = ApiToken
        fields = ("name",)

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])


@admin.register(ApiToken)
class ApiTokenAdmin(ScopedAdmin):
    """Superusers create and revoke tokens; staff users see those of their scopes. Never deleted: revoke instead.

    The secret is shown once, in the page that answers the add POST, and never
    in a message: messages travel in a signed, not encrypted, cookie.
    """

    # No delete: revoke instead; a deleted token leaves event actors nobody can trace.
    superuser_writes = ("add", "change")
    list_display = ("name", "prefix", "scope", "roles", "revoked", "expires_at", "created_at", "last_used_at")
    list_filter = ("revoked", "scope_l1")
    search_fields = ("name", "prefix", "scope", "roles")
    date_hierarchy = "created_at"
    readonly_fields = ("name", "scope", "roles", "prefix", "revoked", "expires_at", "created_at", "last_used_at")
    actions = ("revoke",)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = TokenAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.readonly_fields if obj is not None else ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.readonly_fields if obj is not None else ("name", "scope", "role_set")

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            return  # every field of an existing token is read-only; revocation is the action
        token, secret = create_token(
            scope=form.cleaned_data["scope"], roles=form.cleaned_data["role_set"], name=form.cleaned_data["name"]
        )
        # The admin goes on with `obj` (log entry, response): make it the row we created.
        obj.__dict__.update({k: v for k, v in token.__dict__.items() if k != "_state"})
        obj._state.adding = False
        # Only for response_add of this request; the secret is stored nowhere.
        request._token_secret = secret  # type: ignore[attr-defined]

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None) -> HttpResponse:
        # Rendered, not redirected: a redirect would have to carry the secret in a message (a cookie).
        context = {
            **self.admin_site.each_context(request),
            "title": "Token created",
            "opts": self.opts,
            "token": obj,
            "secret": request._token_secret,  # type: ignore[attr-defined]
        }
        return TemplateResponse(request, "admin/suspensions/apitoken/secret.html", context)

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        n = queryset.filter(revoked=False).update(revoked=True)
        self.message_user(request, f"Revoked {n} token{'s' if n != 1 else ''}.", messages.SUCCESS)


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ("user", "scope", "role")

    def clean_scope(self) -> str:
        return clean_scope(self.cleaned_data["scope"])


@admin.register(Membership)
class MembershipAdmin(ScopedAdmin):
    """Superusers grant, edit and remove memberships; staff users see those of their scopes."""

    superuser_writes = ("add", "change", "delete")
    form = MembershipForm
    list_display = ("user", "scope", "role")
    list_filter = ("role", "scope_l1")
    search_fields = ("user__username", "scope")
    autocomplete_fields = ("user",)

    def save_model(self, request: HttpRequest, obj: Membership, form: Any, change: bool) -> None:
        obj.stamp_scope(form.cleaned_data["scope"])
        super().save_model(request, obj, form, change)


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
    date_hierarchy = "created_at"
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
    date_hierarchy = "created_at"
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

    @admin.display(description="Body")
    def pretty_body(self, obj: WebhookMessage) -> str:
        return format_html("<pre>{}</pre>", pretty_json_text(obj.body))


@admin.register(OutboxEvent)
class OutboxEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "type", "scope", "run_id", "created_at", "dispatched_at")
    list_filter = ("type", "scope_l1")
    search_fields = ("run_id__exact", "type")
    date_hierarchy = "created_at"


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


@admin.register(User)
class SuperuserOnlyUserAdmin(SuperuserOnlyAdmin, UserAdmin):
    pass


@admin.register(Group)
class SuperuserOnlyGroupAdmin(SuperuserOnlyAdmin, GroupAdmin):
    pass
