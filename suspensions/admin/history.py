"""A run's whole history for its admin change page (docs/decisions.md, "The run's admin page"): one read-only helper,
fixed queries.

The evidence tables keep the run's id as a plain column, not a foreign key
(deleting a pause must never delete its proof), so Django's inlines cannot
show them. `run_history` reads each table once, filtered by the run's id
and by the staff user's scopes (the same filter as every admin list), and
returns rows ready for the template: JSON already indented, tool names as a
list, each row with the URL of its own admin page. The page issues the same
number of queries whatever the run holds.
"""

import dataclasses
from typing import Any

from django.db.models import Q
from django.urls import reverse

from ..models import (
    Admission,
    Approval,
    ApprovalVote,
    ClosureReceipt,
    Event,
    ExpiryReceipt,
    FlowWait,
    Run,
    Start,
    Suspension,
    WebhookMessage,
)
from ..presenters import pretty_json_text
from ..principals import Principal
from ..services import audit

# A run's events, and its webhook messages, past this many are left to the filtered list (linked from the page).
SECTION_LIMIT = 500


def admin_url(model: type[Any], pk: Any) -> str:
    return reverse(f"admin:suspensions_{model._meta.model_name}_change", args=[pk])


def changelist_of_run(model: type[Any], run_id: Any) -> str:
    return f"{reverse(f'admin:suspensions_{model._meta.model_name}_changelist')}?run_id={run_id}"


def pretty(text: Any) -> str:
    """Indented JSON text (the template escapes it inside <pre>); empty stays empty."""
    return pretty_json_text(text) if text not in ("", None) else ""


def tool_list(tool_names: str) -> list[str]:
    """The stored ",a,b," containment form as the names it holds."""
    return [name for name in tool_names.split(",") if name]


def run_history(principal: Principal, run: Run) -> dict[str, Any]:
    """Every section of the run page, each read with one query (votes and messages included)."""
    mine = Q(principal.scope_q(), run_id=run.id)
    approvals = list(Approval.objects.filter(mine).order_by("created_at"))
    votes: dict[Any, list[dict[str, Any]]] = {}
    for v in ApprovalVote.objects.filter(mine).order_by("cast_at", "id"):
        votes.setdefault(v.suspension_id, []).append(_vote_row(v))
    return {
        "events": _events(mine, run),
        "pause": _pause(Suspension.objects.filter(mine).first()),
        "approvals": [_approval_row(a, votes.get(a.suspension_id, [])) for a in approvals],
        "admissions": [
            _admission_row(a) for a in Admission.objects.filter(mine).defer("input").order_by("admitted_at", "id")
        ],
        "starts": [_row(Start, s, at=s.started_at) for s in Start.objects.filter(mine).order_by("started_at", "id")],
        "expiries": [
            _row(ExpiryReceipt, x, at=x.expired_at) for x in ExpiryReceipt.objects.filter(mine).order_by("id")
        ],
        "closures": [
            _row(ClosureReceipt, c, at=c.closed_at) for c in ClosureReceipt.objects.filter(mine).order_by("id")
        ],
        "flow_waits": [
            _row(FlowWait, w, at=w.created_at) for w in FlowWait.objects.filter(mine).order_by("created_at")
        ],
        "messages": _messages(mine, run),
        "verdict": _verdict(run),
    }


def _events(mine: Q, run: Run) -> dict[str, Any]:
    events = list(Event.objects.filter(mine).order_by("id")[: SECTION_LIMIT + 1])
    rows = [
        {
            "id": e.id,
            "at": e.at,
            "kind": e.kind,
            "actor": e.actor,
            "revision": e.revision,
            "data": pretty(e.data),
            "hashes": [e.prev_hash, e.hash],
            "url": admin_url(Event, e.id),
        }
        for e in events[:SECTION_LIMIT]
    ]
    return {"rows": rows, "more": len(events) > SECTION_LIMIT, "all_url": changelist_of_run(Event, run.id)}


def _messages(mine: Q, run: Run) -> dict[str, Any]:
    found = (
        WebhookMessage.objects.filter(mine)
        .select_related("endpoint")
        .only("id", "type", "status", "attempts", "created_at", "delivered_at", "endpoint__url", "endpoint__id")
        .order_by("event_id", "id")
    )
    messages = list(found[: SECTION_LIMIT + 1])
    rows = [
        {
            "id": m.id,
            "type": m.type,
            "status": m.status,
            "attempts": m.attempts,
            "created_at": m.created_at,
            "delivered_at": m.delivered_at,
            "endpoint": m.endpoint.url,
            "url": admin_url(WebhookMessage, m.id),
        }
        for m in messages[:SECTION_LIMIT]
    ]
    return {"rows": rows, "more": len(messages) > SECTION_LIMIT, "all_url": changelist_of_run(WebhookMessage, run.id)}


def _pause(s: Suspension | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "id": s.id,
        "reason": s.reason,
        "created_at": s.created_at,
        "expires_at": s.expires_at,
        "tool_names": tool_list(s.tool_names),
        "reply_with": s.reply_with,
        "pending": pretty(s.pending),
        "continuation": pretty(s.continuation),
        "url": admin_url(Suspension, s.id),
    }


def _approval_row(a: Approval, votes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "suspension_id": a.suspension_id,
        "status": a.status,
        "requested_by": a.requested_by,
        "quorum": a.quorum,
        "decided_by": a.decided_by,
        "acting_for": a.acting_for,
        "note": a.note,
        "created_at": a.created_at,
        "resolved_at": a.resolved_at,
        "pending": pretty(a.pending),
        "final_calls": pretty(a.final_calls),
        "votes": votes,
        "url": admin_url(Approval, a.suspension_id),
    }


def _vote_row(v: ApprovalVote) -> dict[str, Any]:
    voter = f"{v.voter} for {v.acting_for}" if v.acting_for else v.voter
    return {"voter": voter, "cast_at": v.cast_at, "note": v.note, "url": admin_url(ApprovalVote, v.id)}


def _admission_row(a: Admission) -> dict[str, Any]:
    return {**_row(Admission, a, at=a.admitted_at), "source": a.source, "state": a.state}


def _row(model: type[Any], obj: Any, *, at: Any) -> dict[str, Any]:
    """The columns the receipts share (those a model lacks are None), and the row's admin URL."""
    return {
        "id": obj.pk,
        "at": at,
        "url": admin_url(model, obj.pk),
        "actor": getattr(obj, "actor", None),
        "revision": getattr(obj, "run_revision", None) or getattr(obj, "claimed_revision", None),
        "digest": getattr(obj, "digest", None) or getattr(obj, "request_digest", None),
        "store_key": getattr(obj, "store_key", None),
        "live": getattr(obj, "live", None),
    }


def _verdict(run: Run) -> dict[str, Any]:
    """The "verify this run" result: the run's hash chain recomputed from its rows (services.audit.verify_run)."""
    verdict = audit.verify_run(run.id)
    details = {f.name: getattr(verdict, f.name) for f in dataclasses.fields(verdict)}
    ok = bool(details.pop("ok"))
    return {"ok": ok, "details": [(k.replace("_", " "), v) for k, v in details.items()]}
