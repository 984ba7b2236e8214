"""Django admin for auditors and admins (DESIGN §11).

Evidence and state rows are read-only here, superusers included: state
changes only through the services, and evidence is never edited. Tokens are
created (secret shown once) and revoked; memberships are edited.
"""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from . import scopes
from .models import (
    Admission,
    ApiToken,
    Approval,
    ClosureReceipt,
    Event,
    ExpiryReceipt,
    FlowWait,
    Membership,
    Role,
    Run,
    Start,
    Suspension,
)
from .tokens import create_token

admin.site.site_header = "Suspensions admin"
admin.site.site_title = "Suspensions admin"
admin.site.index_title = "Runs, pauses, evidence and access"


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable by every active staff user; nobody adds, changes or deletes through the admin."""

    list_per_page = 50
    show_full_result_count = False  # no COUNT(*) over the whole table on every list page

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


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
    list_display = ("suspension_id", "run_id", "scope", "status", "decided_by", "created_at", "resolved_at")
    list_filter = ("status", "scope_l1")
    search_fields = ("suspension_id__exact", "run_id__exact", "decided_by", "note")
    date_hierarchy = "created_at"


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
    # The decision token hash is left out of the list: it is a secret's fingerprint, not evidence to browse.
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
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "scope", "roles", "revoked", "created_at", "last_used_at")
    list_filter = ("revoked", "scope_l1")
    search_fields = ("name", "prefix", "scope", "roles")
    date_hierarchy = "created_at"
    readonly_fields = ("name", "scope", "roles", "prefix", "revoked", "created_at", "last_used_at")
    actions = ("revoke",)
    show_full_result_count = False

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
        # The admin goes on with `obj` (log entry, redirect): make it the row we created.
        obj.__dict__.update({k: v for k, v in token.__dict__.items() if k != "_state"})
        obj._state.adding = False
        messages.warning(request, f"Copy the secret of token “{token.name}” now; it is shown only once: {secret}")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead: a deleted token leaves event actors nobody can trace

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
class MembershipAdmin(admin.ModelAdmin):
    form = MembershipForm
    list_display = ("user", "scope", "role")
    list_filter = ("role", "scope_l1")
    search_fields = ("user__username", "scope")
    autocomplete_fields = ("user",)

    def save_model(self, request: HttpRequest, obj: Membership, form: Any, change: bool) -> None:
        obj.stamp_scope(form.cleaned_data["scope"])
        super().save_model(request, obj, form, change)
