"""Escalation chains (docs/policies.md, "Escalation chains"): the sweep runs each step of a pending approval once, in
order, before the deadline.

Lock contract (STYLE rules 3 and 4), the sweep's own: one statement locks the
RUN rows of approvals whose next step is due (`FOR NO KEY UPDATE OF run SKIP
LOCKED`, the row a claim locks first), then a fresh statement re-reads those
approvals under the lock and keeps the ones still pending, still due and not
past their deadline. A row another sweeper took, or a decision resolved, is
seen as it is now; the step's UPDATE is guarded by the step number it read.
So two sweeps at once (two beats, many workers) run each step exactly once.

Each step writes an `escalated` event (its `step` index, `after_seconds` and
`notify`) at the run's unchanged revision, announces `approval.escalated`
with the step, and moves the approval on to the next step (or to none), in
one transaction per batch. The notifications follow from the announcement
(services.notifications: each step asks its scopes', groups' and people's
approvers once). A step past the deadline is not run: at the deadline
`on_expiry` applies instead (services.sweep runs the chain's batches first).
"""

from collections.abc import Iterable
from datetime import datetime, timedelta
from uuid import UUID

from django.db import transaction
from django.db.models import Q

from ..clock import db_now
from ..models import Approval, ApprovalStatus, Run, RunState
from .claims import event, write_events
from .sql.expiry import SWEEPER
from .sql.rows import Writes


def _due(now: datetime) -> Q:
    return Q(status=ApprovalStatus.PENDING, next_escalation_at__lte=now) & (
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


def escalate_batch(*, limit: int, now: datetime | None = None, exclude: Iterable[UUID] = ()) -> tuple[int, list[UUID]]:
    """Run the next due step of up to `limit` pending approvals, one transaction; returns (runs locked, run ids done).

    Runs locked by a claim or another sweeper are skipped (SKIP LOCKED): theirs, or the next sweep's.
    """
    with transaction.atomic():
        now = now or db_now()
        candidates = (
            Approval.objects.filter(_due(now))
            .exclude(run_id__in=list(exclude))
            .order_by("next_escalation_at")
            .values_list("run_id", flat=True)[:limit]
        )
        runs = {
            run.id: run
            for run in Run.objects.filter(pk__in=list(candidates), state=RunState.PAUSED)
            .select_for_update(skip_locked=True, no_key=True, of=("self",))
            .only("id", "revision", "scope", "scope_l1", "scope_l2", "scope_l3", "tags")
        }
        if not runs:
            return 0, []
        # Re-read under the run locks: what a decision or another sweeper committed first is seen as it is now.
        due = list(Approval.objects.filter(_due(now), run_id__in=list(runs)).order_by("next_escalation_at"))
        writes, events = Writes(), []
        for approval in due:
            index = approval.escalation_step
            steps = approval.chain
            if index >= len(steps):  # nothing left (a chain edited by hand): stop asking
                writes.update(Approval, {"suspension_id": approval.pk}, None, next_escalation_at=None)
                continue
            step = steps[index]
            row = event(
                runs[approval.run_id],
                "escalated",
                SWEEPER,
                now,
                suspension_id=str(approval.pk),
                step=index,
                after_seconds=step["after_seconds"],
                notify=step["notify"],
            )
            row.announce_tags = tuple(approval.tags)  # the pause's, as every event about it
            events.append(row)
            following = steps[index + 1]["after_seconds"] if index + 1 < len(steps) else None
            next_at = approval.created_at + timedelta(seconds=following) if following is not None else None
            guard = {"suspension_id": approval.pk, "escalation_step": index}
            writes.update(Approval, guard, None, escalation_step=index + 1, next_escalation_at=next_at)
        if events:
            write_events(writes, *events)
        writes.send()
    return len(runs), [UUID(str(e.run_id)) for e in events]


def run_due_steps(*, batch_size: int, now: datetime | None = None) -> int:
    """Every escalation step now due, batch after batch (each one transaction); returns how many ran.

    An approval with several steps overdue (the sweep was down) runs one per batch, in order, all in this pass. A
    pass stops at the first batch that ran no step: none is left, or the rest is locked elsewhere (the next pass's).
    Each batch runs at least one step otherwise, and a chain has at most ten, so a pass always ends.
    """
    ran = 0
    while True:
        _, done = escalate_batch(limit=batch_size, now=now)
        ran += len(done)
        if not done:
            return ran
