"""Scoped reads shared by the API, the console and the tasks. Selectors never lock."""

from django.db.models import Exists, OuterRef, Q, QuerySet

from . import scopes
from .models import (
    Admission,
    AdmissionSource,
    AdmissionState,
    Approval,
    ClosureReceipt,
    Event,
    ExpiryReceipt,
    Reason,
    Run,
    RunState,
    Start,
    Suspension,
)
from .principals import Principal


def runs(principal: Principal) -> QuerySet[Run]:
    """Runs in the principal's scopes."""
    return Run.objects.filter(principal.scope_q())


def suspensions(principal: Principal) -> QuerySet[Suspension]:
    """Live pauses in the principal's scopes, with their run joined."""
    return Suspension.objects.filter(principal.scope_q()).select_related("run")


def pending_approvals(principal: Principal) -> QuerySet[Suspension]:
    """Approval pauses nobody has decided yet (the run is still paused), deadline first.

    Only scopes where the principal is an approver or an auditor.
    """
    return (
        Suspension.objects.filter(principal.scope_q("approver", "auditor"))
        .filter(reason=Reason.APPROVAL, run__state=RunState.PAUSED)
        .select_related("run")
        .order_by("deadline", "id")
    )


def admissions(principal: Principal) -> QuerySet[Admission]:
    return Admission.objects.filter(principal.scope_q())


def starts(principal: Principal) -> QuerySet[Start]:
    return Start.objects.filter(principal.scope_q())


def events(principal: Principal) -> QuerySet[Event]:
    return Event.objects.filter(principal.scope_q())


def approvals(principal: Principal) -> QuerySet[Approval]:
    return Approval.objects.filter(principal.scope_q())


def expiries(principal: Principal) -> QuerySet[ExpiryReceipt]:
    return ExpiryReceipt.objects.filter(principal.scope_q())


def closures(principal: Principal) -> QuerySet[ClosureReceipt]:
    return ClosureReceipt.objects.filter(principal.scope_q())


def agent_reply_runs(principal: Principal) -> QuerySet[Run]:
    """Runs the bus must answer or recover (DESIGN §8), by id, in the scopes it holds `bus` in exactly.

    A run qualifies while it holds an agent-reply pause (expired and admitted
    ones included) or, once a start consumed that pause, while it runs an
    agent-reply or dispatch admission. One query: two EXISTS on run_id indexes.
    """
    if principal.superuser:
        exact = Q()
    else:
        # Exact scope, not sub-scopes: each bus answers only for its own level.
        exact = Q(pk__in=[])
        for held in principal.scopes_with("bus"):
            exact |= Q(**{f"scope_l{scopes.depth(held)}": held, "scope": held})
    pause = Suspension.objects.filter(run=OuterRef("pk"), reason=Reason.AGENT_REPLY)
    running = Admission.objects.filter(
        run_id=OuterRef("pk"),
        state__in=[AdmissionState.ADMITTED, AdmissionState.STARTED],
        source__in=[AdmissionSource.AGENT_REPLY, AdmissionSource.DISPATCH],
    )
    return Run.objects.filter(exact).filter(Exists(pause) | Q(Exists(running), state=RunState.RUNNING)).order_by("id")
