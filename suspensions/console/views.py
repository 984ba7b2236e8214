"""The staff console (docs/decisions.md, "The approver's flow in the console"): server-rendered pages for approvers,
operators and auditors.

Every view needs a signed-in active staff user (access.py); what they see comes from their memberships
through the same scoped selectors as the API, and decisions (approvals.py) call
the same service functions as the API. Views build plain dicts, so templates fire no
queries and escape every untrusted string.
"""

from datetime import timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from .. import replicas, selectors
from ..filters import ConsoleRunFilter
from ..models import Reason, Role, RunState
from ..principals import principal_of
from ..timefmt import duration
from . import paging, present, queries
from .access import staff_required


@require_GET
@staff_required
@replicas.lag_tolerant
def dashboard(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    context = {
        "nav": "dashboard",
        "states": queries.state_counts(principal),
        "pauses": queries.pause_counts(principal),
        "expiring": queries.expiring_soon(principal, now),
        "oldest": queries.oldest_pending(principal, now),
        "at_risk": queries.at_risk_count(principal),
        "chart": queries.activity(principal, now),
        "no_scopes": not principal.superuser and not principal.grants,
    }
    return render(request, "console/dashboard.html", context)


@require_GET
@staff_required
@replicas.lag_tolerant
def runs(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    filterset = ConsoleRunFilter(request.GET, queryset=queries.runs_for_list(principal))
    errors = [f"{field}: {' '.join(errs)}" for field, errs in filterset.errors.items()]
    after = paging.id_cursor(request.GET["after"]) if request.GET.get("after") else None
    # A filter that does not parse lists nothing, never every row under an error.
    rows, more = paging.page(filterset.qs, after) if not errors else ([], False)
    context = {
        "nav": "runs",
        "rows": [queries.run_row(r, now) for r in rows],
        "next_link": paging.link(request.GET, str(rows[-1].id)) if more else "",
        "paged": bool(request.GET.get("after")),
        "first_link": paging.link(request.GET),
        "filters": {k: request.GET.get(k, "") for k in ("state", "reason", "agent_id", "scope", "q")},
        "filter_errors": errors,
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
@replicas.lag_tolerant
def uncertain(request: HttpRequest) -> HttpResponse:
    principal, now = principal_of(request), timezone.now()
    # A start seconds old is an engine at work, not a stuck one: by default only settled starts are listed.
    settled = now - timedelta(seconds=settings.UNCERTAIN_AFTER_SECONDS)
    show_recent = request.GET.get("recent") == "1"
    rows = queries.uncertain_starts(principal, now, settled=None if show_recent else settled)
    for row in rows:
        # The closure form is offered only where the user may close (an operator in the run's scope:
        # docs/api.md, "7.6 Closure of an uncertain start").
        row["may_close"] = principal.can(Role.OPERATOR, row["scope"])
        row["recent"] = row["started_at"] > settled
    context = {
        "nav": "uncertain",
        "rows": rows,
        "limit": queries.UNCERTAIN_LIMIT,
        "show_recent": show_recent,
        "hidden_recent": 0 if show_recent else queries.recent_start_count(principal, settled),
        "threshold": duration(settings.UNCERTAIN_AFTER_SECONDS),
    }
    return render(request, "console/uncertain.html", context)
