"""Deciding several approvals from the inbox at once (docs/console.md, "Deciding several at once").

The inbox's rows carry a checkbox and the version the page showed for each
(`version-<approval id>`: run id and revision). One form approves them all,
or denies them all with one reason. Each is decided on its own, in the
inbox's order, through the same service and form handling as the approval
page's decision (approvals.apply_decision), so one refused never stops the
others; the inbox then lists what happened to each, decided or refused with
why. A form that is wrong as a whole (no approval selected, a denial without
its reason, a version that does not parse) decides nothing.
"""

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from .. import services
from ..exceptions import ServiceError
from ..models import Approval
from ..principals import Principal, principal_of
from . import present, queries
from .access import staff_required
from .approvals import LOST, apply_decision, inbox_query, lost_message, outcome, with_query
from .forms import BulkDecisionForm

# What the inbox shows once after a list was decided: [{id, agent_id, tools, ok, text}]; approvals.bulk_results
# reads both keys.
RESULTS = "console.bulk_results"
# What a refused form keeps for the inbox to show again: the selection and the reason typed.
KEPT = "console.bulk_kept"


@require_POST
@staff_required
def decide_many(request: HttpRequest) -> HttpResponse:
    """Approve, or deny with one reason, every selected approval; then back to the inbox, which says what happened."""
    filters = inbox_query(QueryDict(request.POST.get("filters", "")[:2000]))
    inbox = with_query(reverse("console:inbox"), filters)
    form = BulkDecisionForm(request.POST)
    if not form.is_valid():
        request.session[KEPT] = {"ids": request.POST.getlist("approval")[:200], "reason": form.data.get("reason", "")}
        said = " ".join(str(e) for errs in form.errors.values() for e in errs)
        messages.error(request, f"{said} Nothing was decided.")
        return redirect(inbox)
    principal = principal_of(request)
    versions = form.versions()
    records = {r.pk: r for r in queries.visible_approvals(principal).filter(pk__in=[pk for pk, _ in versions])}
    results = [one(principal, records.get(pk), pk, version, form.cleaned_data) for pk, version in versions]
    request.session[RESULTS] = results
    done = sum(1 for r in results if r["ok"])
    verb = "Approved" if form.cleaned_data["decision"] == "approve" else "Denied"
    text = f"{verb} {done} of {len(results)}." if done else f"None of the {len(results)} went through."
    (messages.success if done == len(results) else messages.warning)(request, f"{text} Each one is listed below.")
    return redirect(inbox)


def one(
    principal: Principal, record: Approval | None, pk: UUID, version: services.Version, data: dict[str, Any]
) -> dict[str, Any]:
    """One selected approval decided as the approval page decides it: what happened to it, in words."""
    shown = {"id": str(pk), "agent_id": "", "tools": "", "ok": False}
    if record is None:
        return {**shown, "text": LOST["not_found"]}
    shown |= {"agent_id": record.agent_id, "tools": tool_names(record)}
    if version.suspension_id != record.suspension_id or version.run_id != record.run_id:
        return {**shown, "text": "This row does not belong to this approval; reload the inbox."}
    try:
        decision = apply_decision(principal, pk, version, {**data, "response": ""}, None)
    except ServiceError as exc:
        return {**shown, "text": lost_message(principal, pk, exc)}
    return {**shown, "ok": True, "text": outcome(decision, data["decision"], record.quorum)}


def tool_names(record: Approval) -> str:
    names = [str(c.get("name", "")) for c in present.pending_calls(record.pending)]
    return ", ".join(names[:3]) + (f" + {len(names) - 3} more" if len(names) > 3 else "")
