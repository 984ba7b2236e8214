"""Runs, pauses, approvals and their votes, admissions, starts, receipts, early results, events, flow waits:
read-only."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from ..models import (
    Admission,
    Approval,
    ApprovalVote,
    ClosureReceipt,
    EarlyResult,
    Event,
    ExpiryReceipt,
    FlowWait,
    Run,
    Start,
    Suspension,
)
from ..principals import for_user
from .base import ReadOnlyAdmin, json_column
from .history import run_history, tool_list


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    """A run and, below its fields, its whole history from every table (admin/history.py), read-only."""

    list_display = ("id", "agent_id", "scope", "state", "revision", "last_reason", "updated_at")
    list_filter = ("state", "last_reason", "scope_l1")
    search_fields = ("id__exact", "agent_id", "session_id", "scope")
    date_column = "created_at"
    change_form_template = "admin/suspensions/run/change_form.html"

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Run | None = None,
    ) -> HttpResponse:
        if obj is not None:
            context["history"] = run_history(for_user(request.user), obj)
            context["console_url"] = reverse("console:run", args=[obj.pk])
        return super().render_change_form(request, context, add, change, form_url, obj)


@admin.register(Suspension)
class SuspensionAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "scope", "reason", "expires_at", "created_at")
    list_filter = ("reason", "scope_l1")
    search_fields = ("id__exact", "run__id__exact", "tool_names", "reply_with", "scope")
    date_column = "created_at"
    shown_as = {"tool_names": "tool_name_list", "pending": "pending_json", "continuation": "continuation_json"}
    pending_json = json_column("pending", "Pending calls")
    continuation_json = json_column("continuation", "Continuation")

    @admin.display(description="Tool names")
    def tool_name_list(self, obj: Suspension) -> str:
        # Stored as ",a,b," for a containment filter: shown as the names.
        names = tool_list(obj.tool_names)
        if not names:
            return "-"
        return format_html('<ul class="tool-names">{}</ul>', format_html_join("", "<li>{}</li>", ((n,) for n in names)))


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = (
        "suspension_id",
        "agent_id",
        "scope",
        "status",
        "decided_by",
        "acting_for",
        "created_at",
        "resolved_at",
    )
    list_filter = ("status", "scope_l1")
    search_fields = (
        "suspension_id__exact",
        "run_id__exact",
        "agent_id",
        "requested_by",
        "decided_by",
        "acting_for",
        "note",
    )
    date_column = "created_at"
    # What was asked and how it was decided: the pause itself is gone after a deny or a start.
    fields = (
        "suspension_id",
        "run_id",
        "scope",
        "agent_id",
        "requested_by",
        "created_at",
        "expires_at",
        "pending",
        "quorum",
        "exclude_requester",
        "on_expiry",
        "extend_seconds",
        "escalated_at",
        "status",
        "decided_by",
        "acting_for",
        "note",
        "final_calls",
        "response",
        "resolved_at",
    )
    shown_as = {"pending": "pending_calls", "final_calls": "decided_calls"}
    pending_calls = json_column("pending", "Pending calls")
    decided_calls = json_column("final_calls", "Decided calls (as admitted)")


@admin.register(ApprovalVote)
class ApprovalVoteAdmin(ReadOnlyAdmin):
    list_display = ("suspension_id", "voter", "acting_for", "scope", "cast_at")
    list_filter = ("scope_l1",)
    search_fields = ("suspension_id__exact", "run_id__exact", "voter", "acting_for", "note")
    date_column = "cast_at"
    shown_as = {"calls": "calls_json"}
    calls_json = json_column("calls", "Calls approved")


@admin.register(Admission)
class AdmissionAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "scope", "source", "state", "actor", "claimed_revision", "admitted_at")
    list_filter = ("state", "source", "scope_l1")
    search_fields = ("id__exact", "run_id__exact", "suspension_id__exact", "request_digest", "actor")
    date_column = "admitted_at"
    shown_as = {"input": "input_json"}
    input_json = json_column("input", "Input (indented here; the digest covers the bytes as sent)")


@admin.register(Start)
class StartAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "scope", "run_revision", "actor", "started_at")
    list_filter = ("scope_l1",)
    search_fields = ("id__exact", "run_id__exact", "admission_id__exact", "digest", "request_digest", "actor")
    date_column = "started_at"


@admin.register(ExpiryReceipt)
class ExpiryReceiptAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "suspension_id", "scope", "run_revision", "expired_at")
    list_filter = ("scope_l1",)
    search_fields = ("run_id__exact", "suspension_id__exact", "digest", "request_digest")
    date_column = "expired_at"


@admin.register(ClosureReceipt)
class ClosureReceiptAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "suspension_id", "scope", "actor", "run_revision", "closed_at")
    list_filter = ("scope_l1",)
    search_fields = ("run_id__exact", "suspension_id__exact", "digest", "request_digest", "actor")
    date_column = "closed_at"
    shown_as = {"request": "request_json"}
    request_json = json_column("request", "Request (indented here; the digest covers the bytes as sent)")


@admin.register(EarlyResult)
class EarlyResultAdmin(ReadOnlyAdmin):
    """Tool results kept before their pause
    (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"); `suspension_id` is the pause a resume
    used them for."""

    list_display = ("id", "run_id", "call_id", "scope", "suspension_id", "created_at", "expires_at")
    list_filter = ("scope_l1",)
    search_fields = ("run_id__exact", "call_id", "digest", "suspension_id__exact")
    date_column = "created_at"


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "run_id", "scope", "kind", "actor", "revision", "at")
    list_filter = ("kind", "scope_l1")
    search_fields = ("run_id__exact", "actor", "kind")
    date_column = "at"
    shown_as = {"data": "data_json"}
    data_json = json_column("data", "Data")


@admin.register(FlowWait)
class FlowWaitAdmin(ReadOnlyAdmin):
    # The decision token hash is left out (by ScopedAdmin): a secret's fingerprint, not evidence to browse.
    list_display = ("id", "scope", "pack", "flow", "store_key", "run_id", "live", "created_at")
    list_filter = ("live", "scope_l1")
    search_fields = ("store_key", "correlation_id", "run_id__exact", "suspension_id__exact")
    date_column = "created_at"
