"""Scoped reads shared by the API, the console and the tasks. Selectors never lock."""

from django.db.models import QuerySet

from .models import Admission, Approval, ClosureReceipt, Event, ExpiryReceipt, Reason, Run, RunState, Start, Suspension
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
