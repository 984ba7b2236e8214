"""The staff console (DESIGN §11): server-rendered pages for approvers, operators and auditors.

Every view needs a signed-in active staff user (access.py); what they see comes from their memberships
through the same scoped selectors as the API, and decisions call the same
service functions as the API. Views build plain dicts, so templates fire no
queries and escape every untrusted string.
"""

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from .. import selectors, services
from ..exceptions import ServiceError
from ..filters import RunFilter, SuspensionFilter
from ..models import ApprovalStatus, Reason, Role, RunState
from ..principals import principal_of
from . import paging, present, queries
from .access import staff_required
from .forms import AGE_CHOICES, EXPIRING_CHOICES, DecisionForm

# What an approver reads when their decision did not go through (the service's code -> a sentence).
LOST = {
    "not_suspended": "Someone else already decided this approval.",
    "suspension_expired": "This approval expired before your decision.",
    "version_conflict": "The run moved on since you opened this page.",
    "admission_conflict": "Another approver already approved it.",
    "forbidden": "You do not hold the approver role in this approval's scope.",
    "not_found": "This approval no longer exists or is outside your scopes.",
    "not_an_approval": "This pause is not waiting for an approver.",
    "wrong_gate": "This approval belongs to a flow wait and is answered through its flow, not here.",
    "input_too_large": "The note is too long.",
    "invalid_request": "The decision form was incomplete; reload the page and try again.",
}


@require_GET
@staff_required
def dashboard(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    context = {
        "nav": "dashboard",
        "states": queries.state_counts(principal),
        "reasons": queries.reason_counts(principal),
        "expiring": queries.expiring_soon(principal, now),
        "oldest": queries.oldest_pending(principal, now),
        "chart": queries.activity(principal, now),
        "no_scopes": not principal.superuser and not principal.grants,
    }
    return render(request, "console/dashboard.html", context)


@require_GET
@staff_required
def inbox(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    queryset = selectors.pending_approvals(principal).defer("continuation")
    filterset = SuspensionFilter(request.GET, queryset=queryset)
    after = paging.deadline_cursor(request.GET["after"]) if request.GET.get("after") else None
    rows, more = paging.page(filterset.qs, after)
    next_link = paging.link(request.GET, f"{rows[-1].deadline.isoformat()}~{rows[-1].id}") if more else ""
    context = {
        "nav": "inbox",
        "rows": [present.inbox_row(s, now) for s in rows],
        "next_link": next_link,
        "paged": bool(request.GET.get("after")),
        "first_link": paging.link(request.GET),
        "filters": {k: request.GET.get(k, "") for k in ("agent_id", "tool", "scope", "older_than", "expiring_within")},
        "filter_errors": [f"{field}: {' '.join(errs)}" for field, errs in filterset.errors.items()],
        "filtered": any(request.GET.get(k) for k in ("agent_id", "tool", "scope", "older_than", "expiring_within")),
        "age_choices": AGE_CHOICES,
        "expiring_choices": EXPIRING_CHOICES,
        "scopes": principal.scopes_with(Role.APPROVER, Role.AUDITOR),
    }
    return render(request, "console/inbox.html", context)


@require_GET
@staff_required
def approval(request: HttpRequest, pk: UUID) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    record = get_object_or_404(queries.visible_approvals(principal), pk=pk)
    susp = selectors.suspensions(principal).filter(pk=pk).first()
    context: dict[str, Any] = {
        "nav": "inbox",
        "approval": {
            "id": str(record.suspension_id),
            "run_id": str(record.run_id),
            "scope": record.scope,
            "status": record.status,
            "agent_id": record.agent_id,
            # What was asked, from the record: it outlives the pause (deny, start, expiry).
            "calls": present.call_rows(record.pending),
            "requested_by": record.requested_by,
            "decided_by": record.decided_by,
            "note": record.note,
            "created_at": record.created_at,
            "resolved_at": record.resolved_at,
        },
        "timeline": queries.timeline(principal, record.run_id),
        "pause": pause_context(susp, now) if susp is not None else None,
    }
    if susp is not None and record.status == ApprovalStatus.PENDING and susp.run.state == RunState.PAUSED:
        context["decision"] = decision_context(principal, susp, now)
    return render(request, "console/approval.html", context)


def pause_context(susp: Any, now: Any) -> dict[str, Any]:
    continuation = present.loads(susp.continuation)
    continuation = continuation if isinstance(continuation, dict) else {}
    prompt = continuation.get("system_prompt")
    return {
        "run": {"id": str(susp.run.id), "agent_id": susp.run.agent_id, "state": susp.run.state},
        "run_revision": susp.run.revision,
        "calls": present.call_rows(susp.pending),
        "conversation": present.conversation(continuation),
        "system_prompt": prompt if isinstance(prompt, str) else present.pretty(prompt),
        "config": present.run_config(continuation),
        "deadline": present.countdown(susp.expires_at, now),
        "expires_at": susp.expires_at,
        "created_at": susp.created_at,
        "age": present.age(susp.created_at, now),
    }


def decision_context(principal: Any, susp: Any, now: Any) -> dict[str, Any]:
    expired = susp.expires_at is not None and susp.expires_at <= now
    return {
        "allowed": principal.can(Role.APPROVER, susp.scope),
        "expired": expired,
        # A flow wait is decided through its flow's gate with the decision token, never here.
        "gated": bool(susp.correlation_id),
        "version": {"run_id": str(susp.run.id), "suspension_id": str(susp.id), "run_revision": susp.run.revision},
    }


@require_POST
@staff_required
def decide(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Approve or deny with the version the page showed; every refusal becomes a message, never an error page."""
    principal = principal_of(request)
    record = get_object_or_404(queries.visible_approvals(principal), pk=pk)
    back = redirect("console:approval", pk=pk)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errs in form.errors.values() for e in errs))
        return back
    version = form.version()
    if version.suspension_id != record.suspension_id or version.run_id != record.run_id:
        messages.error(request, "This form does not belong to this approval; reload the page.")
        return back
    try:
        text = apply_decision(principal, pk, version, form.cleaned_data)
    except ServiceError as exc:
        messages.error(request, LOST.get(exc.code, exc.title))
        return back
    messages.success(request, text)
    return redirect("console:run", pk=record.run_id)


def apply_decision(principal: Any, pk: UUID, version: services.Version, data: dict[str, Any]) -> str:
    """The same service as the API's decide endpoint; the approver is the principal, never a form field."""
    decision = services.decide(
        principal=principal, suspension_id=pk, version=version, decision=data["decision"], reason=data["reason"]
    )
    if isinstance(decision, services.Denied):
        if not decision.fresh:
            return "You had already denied this; nothing changed."
        return f"Denied. The run failed with “rejected: {decision.reason}”."
    if not decision.fresh:
        return "You had already approved this; nothing changed."
    return f"Approved. The run is running at revision {decision.run.revision} and waits for its engine."


@require_GET
@staff_required
def runs(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    filterset = RunFilter(request.GET, queryset=queries.runs_for_list(principal))
    after = paging.id_cursor(request.GET["after"]) if request.GET.get("after") else None
    rows, more = paging.page(filterset.qs, after)
    context = {
        "nav": "runs",
        "rows": [queries.run_row(r, now) for r in rows],
        "next_link": paging.link(request.GET, str(rows[-1].id)) if more else "",
        "paged": bool(request.GET.get("after")),
        "first_link": paging.link(request.GET),
        "filters": {k: request.GET.get(k, "") for k in ("state", "reason", "agent_id", "scope")},
        "filter_errors": [f"{field}: {' '.join(errs)}" for field, errs in filterset.errors.items()],
        "states": RunState.values,
        "reasons": Reason.values,
        "scopes": principal.scopes_with(),
    }
    return render(request, "console/runs.html", context)


@require_GET
@staff_required
def run(request: HttpRequest, pk: UUID) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    found = selectors.runs(principal).filter(pk=pk).select_related("suspension").defer("suspension__continuation")
    r = found.first()
    if r is None:
        raise Http404("run not found")
    context = {
        "nav": "runs",
        "run": {**queries.run_row(r, now), "error": r.error, "session_id": r.session_id, "updated_at": r.updated_at},
        "pause": current_pause(r, now),
        "timeline": queries.timeline(principal, r.id),
        "receipts": queries.receipts(principal, r.id),
        "approvals": queries.approvals_of_run(principal, r.id),
    }
    return render(request, "console/run.html", context)


def current_pause(r: Any, now: Any) -> dict[str, Any] | None:
    try:
        susp = r.suspension
    except r.__class__.suspension.RelatedObjectDoesNotExist:
        return None
    return {
        "id": str(susp.id),
        "reason": susp.reason,
        "calls": [{"name": c["name"], "id": c["id"]} for c in present.call_rows(susp.pending)],
        "deadline": present.countdown(susp.expires_at, now),
        "expires_at": susp.expires_at,
        "age": present.age(susp.created_at, now),
        "is_approval": susp.reason == Reason.APPROVAL,
        "claimed": r.state != RunState.PAUSED,
    }


@require_GET
@staff_required
def uncertain(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    rows = queries.uncertain_starts(principal, now)
    for row in rows:
        # The closure form is offered only where the user may close (DESIGN §7: operator in the run's scope).
        row["may_close"] = principal.can(Role.OPERATOR, row["scope"])
    return render(
        request, "console/uncertain.html", {"nav": "uncertain", "rows": rows, "limit": queries.UNCERTAIN_LIMIT}
    )
