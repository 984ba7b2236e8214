"""One approval, pending or decided, as the API and the console read it (docs/policies.md, "Reading an approval").

Below both (STYLE rule 14): the API's GET /approvals/{id} answers this body, and the
console's approval page is drawn from the same body, so a decided approval shows the
calls it decided wherever it is read.
"""

from datetime import datetime
from uuid import UUID

from . import approval_links, selectors
from .approval_links import Link
from .exceptions import Forbidden, NotAnApproval, NotFound, NotSuspended, SuspensionExpired
from .models import AdmissionSource, Approval, ApprovalVote, Reason, RunState
from .principals import Principal
from .wire.answers import ApprovalOut


def find_approval(principal: Principal, suspension_id: UUID) -> ApprovalOut:
    """The approval body for an approver or auditor of its scope (403 without either role anywhere, 404 unseen)."""
    if not principal.superuser and not principal.scopes_with("approver", "auditor"):
        raise Forbidden("the 'approver' or 'auditor' role is required")
    record = selectors.approval_records(principal).filter(pk=suspension_id).first()
    if record is None:
        raise NotFound(f"approval {suspension_id} not found")
    run = selectors.runs(principal).filter(pk=record.run_id).first()
    admission = (
        selectors.admissions(principal)
        .filter(run_id=record.run_id, suspension_id=record.suspension_id, source=AdmissionSource.APPROVAL)
        .defer("input")
        .first()
    )
    votes = list(ApprovalVote.objects.filter(suspension_id=record.suspension_id).order_by("cast_at", "id"))
    return ApprovalOut.of(record, run, admission, votes)


def approval_link(principal: Principal, suspension_id: UUID, now: datetime) -> Link:
    """A sealed link to a pending approval's page (approval_links.py) for an engine of its scope; writes nothing.

    404 unseen, 403 without `engine` there, 403 `not_an_approval` for another kind of pause or a flow wait's
    (decided through its flow, never on the page), 409 `not_suspended` once decided, 410 past its deadline.
    """
    pause = selectors.suspensions(principal).filter(pk=suspension_id).first()
    if pause is None:
        if Approval.objects.filter(principal.scope_q(), pk=suspension_id).exists():
            raise NotSuspended(f"approval {suspension_id} is decided; nothing is waiting for a person")
        raise NotFound(f"approval {suspension_id} not found")
    if not principal.can("engine", pause.scope):
        raise Forbidden(f"the 'engine' role is required in scope '{pause.scope}'")
    if pause.reason != Reason.APPROVAL or pause.correlation_id:
        raise NotAnApproval("only an approval decided in the console has a link; a flow wait is decided by its flow")
    if pause.run.state != RunState.PAUSED:
        raise NotSuspended(f"approval {suspension_id} is decided; nothing is waiting for a person")
    if pause.expires_at is not None and pause.expires_at <= now:
        raise SuspensionExpired(f"approval {suspension_id} passed its deadline")
    expires_at = approval_links.expiry(pause.expires_at, now)
    return Link(approval_id=pause.pk, run_id=pause.run_id, revision=pause.run.revision, expires_at=expires_at)
