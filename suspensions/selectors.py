"""Scoped reads shared by the API, the console and the tasks. Selectors never lock."""

from typing import Any

from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet, Subquery

from . import scopes
from .models import (
    Admission,
    AdmissionSource,
    AdmissionState,
    Approval,
    ApprovalFloor,
    ApprovalVote,
    AuditCheckpoint,
    ClosureReceipt,
    DeliveryAttempt,
    Event,
    ExpiryReceipt,
    LegalHold,
    Notification,
    NotificationRoute,
    Reason,
    Role,
    RoleChange,
    RoleMapping,
    Run,
    RunState,
    SlackChannel,
    Start,
    Suspension,
    WebhookEndpoint,
    WebhookMessage,
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


def latest_admission(
    principal: Principal, run_id: Any, *, with_input: bool = True
) -> tuple[Admission | None, Start | None]:
    """The run's newest admission and its start, if any.

    Newest by the revision its claim took: each claim of a run moves the run
    to a new, greater revision under the run lock, so the order is exact. Ids
    would order by millisecond only across processes (ids.py).

    Recovery, closure and the console read the same row; `with_input=False`
    leaves out the retained input (up to 8 MiB) where only digests are shown.
    """
    query = admissions(principal).filter(run_id=run_id).order_by("-claimed_revision")
    latest = (query if with_input else query.defer("input")).first()
    start = starts(principal).filter(admission_id=latest.id).first() if latest is not None else None
    return latest, start


def is_uncertain_start(run: Run, admission: Admission | None, start: Start | None) -> bool:
    """A run that started executing its latest admission and never finished
    (docs/api.md, "7.6 Closure of an uncertain start")."""
    return (
        run.state == RunState.RUNNING
        and admission is not None
        and start is not None
        and admission.state == AdmissionState.STARTED
    )


def starts(principal: Principal) -> QuerySet[Start]:
    return Start.objects.filter(principal.scope_q())


def events(principal: Principal) -> QuerySet[Event]:
    return Event.objects.filter(principal.scope_q())


def audit_events(principal: Principal, *, scope: str | None, since: Any = None) -> QuerySet[Event]:
    """Events an auditor may export: in its auditor scopes, under `scope` when given, at or after `since`."""
    events = Event.objects.filter(principal.scope_q(Role.AUDITOR))
    if scope is not None:
        events = events.filter(**{f"scope_l{scopes.depth(scope)}": scope})
    if since is not None:
        events = events.filter(at__gte=since)
    return events


def audit_workspaces(principal: Principal, scope: str | None) -> list[str] | None:
    """The workspaces whose checkpoint chains an export of `scope` (or of the caller's auditor scopes) holds;
    None for every one (a superuser's whole export). The legacy chain ("") is always among them."""
    if scope is not None:
        return ["", scopes.levels(scope)["scope_l1"]]
    if principal.superuser:
        return None
    return ["", *sorted({scopes.levels(held)["scope_l1"] for held in principal.scopes_with(Role.AUDITOR)})]


def audit_checkpoints(workspaces: list[str] | None, since: Any = None) -> QuerySet[AuditCheckpoint]:
    """The checkpoints of `workspaces` (every one for None) by chain, then seq; in each chain, from the last
    one before `since` on (all without it): a contiguous run of roots per chain.

    Callers show only the lines of runs the reader may see (a legacy checkpoint's name every tenant's runs).
    """
    checkpoints = AuditCheckpoint.objects.order_by("workspace", "seq")
    if workspaces is not None:
        checkpoints = checkpoints.filter(workspace__in=workspaces)
    if since is not None:
        before = AuditCheckpoint.objects.filter(workspace=OuterRef("workspace"), at__lt=since).order_by("-seq")
        checkpoints = checkpoints.filter(Q(seq__gte=Subquery(before.values("seq")[:1])) | Q(at__gte=since))
    return checkpoints


def approvals(principal: Principal) -> QuerySet[Approval]:
    return Approval.objects.filter(principal.scope_q())


def approval_records(principal: Principal) -> QuerySet[Approval]:
    """Approval requests, pending or resolved, in scopes where the principal approves or audits.

    The record keeps what was asked (agent, calls, requester), so it answers
    after the pause is gone: an auditor always sees what was decided.
    """
    return Approval.objects.filter(principal.scope_q("approver", "auditor"))


def approval_votes(principal: Principal, suspension_id: Any) -> QuerySet[ApprovalVote]:
    """The votes on one approval, first vote first, where the principal approves or audits (as approval_records)."""
    return ApprovalVote.objects.filter(principal.scope_q("approver", "auditor"), suspension_id=suspension_id).order_by(
        "cast_at", "id"
    )


def expiries(principal: Principal) -> QuerySet[ExpiryReceipt]:
    return ExpiryReceipt.objects.filter(principal.scope_q())


def closures(principal: Principal) -> QuerySet[ClosureReceipt]:
    return ClosureReceipt.objects.filter(principal.scope_q())


def agent_reply_runs(principal: Principal) -> QuerySet[Run]:
    """Runs the bus must answer or recover (docs/api.md, "`GET /agent-replies/runs` — discovery"), by id, in the scopes
    it holds `bus` in exactly.

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


def slack_channel_grant(channel_id: str) -> SlackChannel | None:
    """The grant of Slack channel `channel_id`, whoever holds it; None when nobody does. Reads only."""
    return SlackChannel.objects.filter(channel_id=channel_id).first()


def slack_channel_granted(channel_id: str, scope: str) -> bool:
    """Whether Slack channel `channel_id` is granted to `scope` or a scope above it (models.SlackChannel).

    Not filtered by a principal: it answers where a route of `scope` may post,
    for the route's writer and for the delivery. Reads only.
    """
    covering = [prefix for prefix in scopes.levels(scope).values() if prefix]
    return SlackChannel.objects.filter(channel_id=channel_id, scope__in=covering).exists()


def approvers_covering(scope: str) -> QuerySet[Any]:
    """Active staff users holding `approver` in `scope` or a scope above it, who have an email address.

    Not filtered by a principal: it answers who must be told (docs/api.md, "8. Push: webhooks"), for
    the approver emails, never what a caller may see. Superusers are not added:
    a superuser is emailed only for scopes where they hold `approver`.
    """
    from django.contrib.auth import get_user_model

    covering = [prefix for prefix in scopes.levels(scope).values() if prefix]
    return (
        get_user_model()
        .objects.filter(
            is_active=True,
            is_staff=True,
            memberships__role=Role.APPROVER,
            memberships__scope__in=covering,
        )
        .exclude(email="")
        .distinct()
        .order_by("pk")
    )


def webhook_endpoints(principal: Principal) -> QuerySet[WebhookEndpoint]:
    """Endpoints in scopes where the principal is an operator (docs/api.md, "7.8 Webhooks"): nobody else manages or
    reads them.

    Unlike the evidence rows, seeing the scope is not enough: an endpoint's URL
    and deliveries are configuration of the operators' side.
    """
    # A2A push subscriptions (bound to one run) are their task's, read and changed through A2A (docs/api.md, "A2A").
    return WebhookEndpoint.objects.filter(principal.scope_q(Role.OPERATOR), run_id__isnull=True)


def notification_routes(principal: Principal) -> QuerySet[NotificationRoute]:
    """Routes in scopes where the principal is an operator: configuration, like webhook endpoints."""
    return NotificationRoute.objects.filter(principal.scope_q(Role.OPERATOR))


def legal_holds(principal: Principal) -> QuerySet[LegalHold]:
    """Legal holds in scopes where the principal is an auditor or an operator, newest first."""
    return LegalHold.objects.filter(principal.scope_q(Role.AUDITOR, Role.OPERATOR)).order_by("-created_at", "-id")


def notifications(principal: Principal) -> QuerySet[Notification]:
    """Notifications (approver emails, Slack messages) in scopes where the principal is an operator."""
    return Notification.objects.filter(principal.scope_q(Role.OPERATOR))


def webhook_messages(principal: Principal, endpoint_id: Any) -> QuerySet[WebhookMessage]:
    """One endpoint's messages with their attempts in order (two queries per page), in operator scopes."""
    attempts = Prefetch("attempt_rows", queryset=DeliveryAttempt.objects.order_by("number"))
    return (
        WebhookMessage.objects.filter(principal.scope_q(Role.OPERATOR))
        .filter(endpoint_id=endpoint_id)
        .prefetch_related(attempts)
    )


def approval_floors(principal: Principal) -> QuerySet[ApprovalFloor]:
    """Floors in scopes where the principal is an operator: like webhooks, the operators' configuration."""
    return ApprovalFloor.objects.filter(principal.scope_q(Role.OPERATOR))


def role_mappings(principal: Principal) -> QuerySet[RoleMapping]:
    """Role mappings in scopes where the principal is an operator, newest first: the operators' configuration."""
    return RoleMapping.objects.filter(principal.scope_q(Role.OPERATOR)).order_by("-created_at", "-id")


def role_changes(principal: Principal) -> QuerySet[RoleChange]:
    """Provider-given role changes in scopes where the principal is an auditor or an operator, newest first."""
    return RoleChange.objects.filter(principal.scope_q(Role.AUDITOR, Role.OPERATOR)).order_by("-at", "-id")


def covering_floors(scope: str) -> QuerySet[ApprovalFloor]:
    """Every floor on `scope`'s path (its own and its ancestors'): what a pause in `scope` must meet.

    Not a principal's read: the floors bind whoever pauses, whether or not they may see them.
    """
    return ApprovalFloor.objects.filter(scope__in=scopes.path(scope))


def floors_below(scope: str) -> QuerySet[ApprovalFloor]:
    """The floors of the scopes under `scope` (not its own): a change to it must leave them satisfiable."""
    return ApprovalFloor.objects.filter(**{f"scope_l{scopes.depth(scope)}": scope}).exclude(scope=scope)
