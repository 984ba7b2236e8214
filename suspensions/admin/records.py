"""Runs, pauses, approvals and their votes, admissions, starts, receipts, early results, events, flow waits:
read-only."""

from django.contrib import admin
from django.utils.html import format_html

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
from ..presenters import pretty_json_text
from .base import ReadOnlyAdmin


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
        "quorum",
        "exclude_requester",
        "on_expiry",
        "extend_seconds",
        "escalated_at",
        "status",
        "decided_by",
        "note",
        "decided_calls",
        "response",
        "resolved_at",
    )
    readonly_fields = ("pending_calls", "decided_calls")

    @admin.display(description="Pending calls")
    def pending_calls(self, obj: Approval) -> str:
        return format_html("<pre>{}</pre>", pretty_json_text(obj.pending))

    @admin.display(description="Decided calls (as admitted)")
    def decided_calls(self, obj: Approval) -> str:
        return format_html("<pre>{}</pre>", pretty_json_text(obj.final_calls)) if obj.final_calls else "-"


@admin.register(ApprovalVote)
class ApprovalVoteAdmin(ReadOnlyAdmin):
    list_display = ("suspension_id", "voter", "scope", "cast_at")
    list_filter = ("scope_l1",)
    search_fields = ("suspension_id__exact", "run_id__exact", "voter", "note")
    date_hierarchy = "cast_at"


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


@admin.register(EarlyResult)
class EarlyResultAdmin(ReadOnlyAdmin):
    """Tool results kept before their pause (DESIGN §22); `suspension_id` is the pause a resume used them for."""

    list_display = ("id", "run_id", "call_id", "scope", "suspension_id", "created_at", "expires_at")
    list_filter = ("scope_l1",)
    search_fields = ("run_id__exact", "call_id", "digest", "suspension_id__exact")
    date_hierarchy = "created_at"


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
