"""One approval, pending or decided, as the API and the console read it (docs/policies.md, "Reading an approval").

Below both (STYLE rule 14): the API's GET /approvals/{id} answers this body, and the
console's approval page is drawn from the same body, so a decided approval shows the
calls it decided wherever it is read.
"""

from uuid import UUID

from . import selectors
from .exceptions import Forbidden, NotFound
from .models import AdmissionSource, ApprovalVote
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
