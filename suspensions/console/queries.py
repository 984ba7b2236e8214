"""The console's reads, built on the scoped selectors (so visibility is decided in one place).

Each function returns plain rows for one page section in a fixed number of
queries, whatever the number of rows behind it.
"""

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Count, F, QuerySet
from django.db.models.functions import TruncHour

from .. import selectors, timefmt
from ..filters import at_risk
from ..models import Admission, AdmissionState, Approval, Reason, Run, RunState, Start, Suspension
from ..principals import Principal
from . import chart, present

EXPIRING_SOON = timedelta(hours=1)
TIMELINE_LIMIT = 500
UNCERTAIN_LIMIT = 200


def visible_approvals(principal: Principal) -> QuerySet[Approval]:
    """Approval requests (pending or resolved) where the principal approves or audits."""
    return selectors.approval_records(principal)


# The dashboard counts each number up to this many and shows "1,000+" past it (docs/performance.md, "At scale"): each
# count reads at most COUNT_CAP + 1 entries of an index leading with what it counts, so the page costs the same at a
# million runs as at a thousand (docs/deploy.md, "Capacity").
COUNT_CAP = 1_000


def capped_counts(querysets: dict[str, QuerySet[Any]]) -> dict[str, int]:
    """Each queryset's row count, at most COUNT_CAP + 1, all in one statement (one round trip).

    `SELECT (SELECT count(*) FROM (<q1> LIMIT cap+1) AS c), (...)`: each counted row only its primary key.
    """
    if not querysets:
        return {}
    cap = COUNT_CAP
    parts: list[str] = []
    params: list[Any] = []
    for qs in querysets.values():
        try:
            sql, p = qs.order_by().values("pk")[: cap + 1].query.sql_with_params()
        except EmptyResultSet:  # a filter that matches nothing (a user without memberships): no row to count
            parts.append("0")
            continue
        parts.append(f"(SELECT count(*) FROM ({sql}) AS c)")
        params.extend(p)
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), params)
        row = cursor.fetchone()
    return dict(zip(querysets, row, strict=True))


def shown(n: int) -> dict[str, Any]:
    """A count as the page shows it: exact up to COUNT_CAP, "1,000+" past it."""
    return {"n": f"{COUNT_CAP:,}+" if n > COUNT_CAP else n, "capped": n > COUNT_CAP}


def state_counts(principal: Principal) -> list[dict[str, Any]]:
    """Runs by state, each counted along run_state_updated (the state leads it) up to COUNT_CAP."""
    runs = selectors.runs(principal)
    found = capped_counts({s: runs.filter(state=s) for s in RunState.values})
    return [{"state": s, **shown(found[s])} for s in RunState.values]


# What a live pause waits for, in the dashboard's order: (key, label, what the number counts).
# The first three are the paused runs; a pause claimed (approved, answered, resumed) stays live until its
# engine starts it, and its run counts as running: that is why they are split (issue 38).
WAITING = [
    ("person", "Waiting for a person", "approval pauses nobody has decided yet"),
    ("tool", "Waiting for a tool result", "external-tool pauses not resumed yet"),
    ("reply", "Waiting for an agent's reply", "agent-reply pauses not answered yet"),
    ("approved", "Approved, waiting for the engine", "approval pauses approved and not started yet"),
    ("resumed", "Resumed, waiting for the engine", "tool and reply pauses resumed and not started yet"),
]
OPEN: dict[str, str] = {Reason.APPROVAL: "person", Reason.EXTERNAL_TOOL: "tool", Reason.AGENT_REPLY: "reply"}


def waiting_for(reason: str, run_state: str) -> str:
    """What a live pause waits for: someone (its run is paused), or its engine (its run was claimed)."""
    if run_state == RunState.PAUSED:
        return OPEN.get(reason, "tool")
    return "approved" if reason == Reason.APPROVAL else "resumed"


def pause_counts(principal: Principal) -> list[dict[str, Any]]:
    """Every live pause counted once, by what it waits for (WAITING's order), each number up to COUNT_CAP.

    The live pauses of each reason are counted along the pause's inbox index (the reason leads it); the claimed
    ones (approved or resumed, waiting for the engine) are those with an admission still `admitted`, read along
    admission_work (the state leads it) with their pause's reason: the engine's queue, not the history. What waits
    for someone is what is live less what is claimed.
    """
    pauses = selectors.suspensions(principal)
    queue = selectors.admissions(principal).filter(state=AdmissionState.ADMITTED)
    found = capped_counts(
        {
            **{f"live {r}": pauses.filter(reason=r) for r in OPEN},
            **{
                f"claimed {r}": queue.filter(suspension_id__in=Suspension.objects.filter(reason=r).values("pk"))
                for r in OPEN
            },
        }
    )
    live, claimed = ({r: found[f"{kind} {r}"] for r in OPEN} for kind in ("live", "claimed"))
    tool_or_reply = claimed[Reason.EXTERNAL_TOOL] + claimed[Reason.AGENT_REPLY]
    waiting = {
        **{OPEN[r]: max(live[r] - claimed[r], 0) if live[r] <= COUNT_CAP else live[r] for r in OPEN},
        "approved": claimed[Reason.APPROVAL],
        "resumed": min(tool_or_reply, COUNT_CAP + 1),
    }
    return [{"key": k, "label": label, "counts": counts, **shown(waiting[k])} for k, label, counts in WAITING]


def expiring_soon(principal: Principal, now: datetime, limit: int = 8) -> list[dict[str, Any]]:
    rows = (
        selectors.suspensions(principal)
        .filter(expires_at__gt=now, expires_at__lte=now + EXPIRING_SOON)
        .defer("continuation")
        .order_by("expires_at", "id")[:limit]
    )
    labels = {k: label for k, label, _ in WAITING}
    return [
        {
            **present.inbox_row(s, now),
            "reason": s.reason,
            "waiting": labels[waiting_for(s.reason, s.run.state)],
            "claimed": s.run.state != RunState.PAUSED,
            "decidable": s.reason == Reason.APPROVAL and s.run.state == RunState.PAUSED,
        }
        for s in rows
    ]


def at_risk_count(principal: Principal) -> dict[str, Any]:
    """Pending approvals in the principal's inbox past 80% of their window, counted up to COUNT_CAP (along the
    approvals' at-risk partial index), as the page shows it."""
    found = capped_counts({"at_risk": selectors.pending_approvals(principal).filter(at_risk())})
    return shown(found["at_risk"])


def oldest_pending(principal: Principal, now: datetime) -> dict[str, Any] | None:
    s = selectors.pending_approvals(principal).defer("continuation").order_by("created_at", "id").first()
    return present.inbox_row(s, now) if s is not None else None


def activity(principal: Principal, now: datetime) -> dict[str, Any]:
    counts = (
        selectors.events(principal)
        .filter(at__gte=chart.window_start(now), kind__in=[kind for kind, _, _ in chart.SERIES])
        .annotate(hour=TruncHour("at"))
        .order_by()
        .values_list("hour", "kind")
        .annotate(n=Count("pk"))
    )
    return chart.build(counts, now)


def run_row(r: Run, now: datetime) -> dict[str, Any]:
    return {
        "id": str(r.id),
        "agent_id": r.agent_id,
        "scope": r.scope,
        "state": r.state,
        "revision": r.revision,
        "last_reason": r.last_reason,
        "paused_on": str(getattr(r, "live_suspension_id", None) or ""),
        "created_at": r.created_at,
        "updated": present.age(r.updated_at, now),
        "error": present.short(timefmt.times_in_text(r.error), 80),
    }


def runs_for_list(principal: Principal) -> QuerySet[Run]:
    return selectors.runs(principal).annotate(live_suspension_id=F("suspension__id")).order_by("-id")


def timeline(principal: Principal, run_id: UUID) -> list[dict[str, Any]]:
    events = selectors.events(principal).filter(run_id=run_id).order_by("id")[:TIMELINE_LIMIT]
    return [present.event_row(e) for e in events]


def receipts(principal: Principal, run_id: UUID) -> dict[str, list[dict[str, Any]]]:
    return {
        "admissions": [
            present.admission_row(a)
            for a in selectors.admissions(principal).filter(run_id=run_id).defer("input").order_by("admitted_at", "id")
        ],
        "starts": [present.start_row(s) for s in selectors.starts(principal).filter(run_id=run_id).order_by("id")],
        "expiries": [present.expiry_row(x) for x in selectors.expiries(principal).filter(run_id=run_id).order_by("id")],
        "closures": [
            present.closure_row(c) for c in selectors.closures(principal).filter(run_id=run_id).order_by("id")
        ],
    }


def approvals_of_run(principal: Principal, run_id: UUID) -> list[dict[str, Any]]:
    rows = selectors.approvals(principal).filter(run_id=run_id).order_by("created_at")
    return [dict(a) for a in rows.values("suspension_id", "status", "decided_by", "note", "created_at", "resolved_at")]


def _unfinished_starts(principal: Principal) -> QuerySet[Start]:
    """Starts of runs still `running` whose latest admission was started and never finished."""
    running = selectors.runs(principal).filter(state=RunState.RUNNING).values("pk")
    started = Admission.objects.filter(state=AdmissionState.STARTED, run_id__in=running).values("pk")
    return selectors.starts(principal).filter(admission_id__in=started)


def uncertain_starts(principal: Principal, now: datetime, *, settled: datetime | None = None) -> list[dict[str, Any]]:
    """Unfinished starts, oldest first; with `settled`, only those started at or before it."""
    found = _unfinished_starts(principal)
    if settled is not None:
        found = found.filter(started_at__lte=settled)
    starts = list(found.order_by("started_at", "id")[:UNCERTAIN_LIMIT])
    admissions = Admission.objects.filter(pk__in=[s.admission_id for s in starts]).defer("input").in_bulk()
    runs = Run.objects.filter(pk__in=[s.run_id for s in starts]).in_bulk()
    return [_uncertain_row(s, admissions[s.admission_id], runs[s.run_id], now) for s in starts]


def recent_start_count(principal: Principal, settled: datetime) -> int:
    """How many unfinished starts are younger than `settled`: the ones the default list leaves out."""
    return _unfinished_starts(principal).filter(started_at__gt=settled).count()


def _uncertain_row(s: Start, a: Admission, r: Run, now: datetime) -> dict[str, Any]:
    return {
        "run_id": str(r.id),
        "agent_id": r.agent_id,
        "scope": r.scope,
        "revision": r.revision,
        "admission_id": str(a.id),
        "source": a.source,
        "admission_digest": a.request_digest,
        "start_digest": s.digest,
        "started_at": s.started_at,
        "running_for": timefmt.duration((now - s.started_at).total_seconds()),
    }
