"""The one reminder of a pending approval (docs/notifications.md, "Email"): claimed here, its emails written as
notifications."""

from django.db import transaction
from django.db.models import DurationField, ExpressionWrapper, F
from django.db.models.functions import Now

from ..clock import db_now
from ..models import Approval, ApprovalStatus
from . import notifications


def claim_due_reminders(*, limit: int = 200) -> list[Approval]:
    """Claim up to `limit` pending approvals past 80% of their time to deadline, not yet reminded.

    One short transaction: `SELECT ... FOR UPDATE SKIP LOCKED` on the approval
    rows only (no run lock: a transition resolving one of them waits for this
    transaction at most), then `reminded_at` set for all of them in one UPDATE
    and their reminder emails written as notifications, in the same transaction.
    Two beats or workers at once claim disjoint rows, and a claimed row is never
    claimed again: each approver's reminder is written once and delivered at
    least once (services.notifications), after the commit. Approvals without
    a deadline, or past it (the sweep's), are never due. The database clock decides.
    """
    # now >= created_at + 0.8 * (expires_at - created_at), kept in integer
    # arithmetic on intervals.
    elapsed_x5 = ExpressionWrapper((Now() - F("created_at")) * 5, output_field=DurationField())
    span_x4 = ExpressionWrapper((F("expires_at") - F("created_at")) * 4, output_field=DurationField())
    with transaction.atomic():
        due: list[Approval] = list(
            Approval.objects.select_for_update(skip_locked=True)
            .alias(elapsed_x5=elapsed_x5, span_x4=span_x4)
            .filter(
                status=ApprovalStatus.PENDING,
                reminded_at__isnull=True,
                expires_at__gt=Now(),
                elapsed_x5__gte=F("span_x4"),
            )
            .order_by("expires_at")[:limit]
        )
        if due:
            Approval.objects.filter(pk__in=[a.pk for a in due]).update(reminded_at=Now())
            notifications.write_reminders(due, db_now())
    return due


def send_due_reminders(*, batch: int = 200) -> int:
    """Claim every reminder now due, batch by batch; returns how many approvals were reminded."""
    reminded = 0
    while True:
        claimed = claim_due_reminders(limit=batch)
        reminded += len(claimed)
        if len(claimed) < batch:
            return reminded
