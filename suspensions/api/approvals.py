"""One approval, pending or decided, with what was asked (DESIGN §15, last paragraph)."""

from typing import Any
from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import presenters, selectors
from ..exceptions import Forbidden, NotFound
from ..models import AdmissionSource
from ..principals import Principal
from . import shapes
from .authentication import principal_of
from .views import ERRORS


def find_approval(principal: Principal, suspension_id: UUID) -> dict[str, Any]:
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
    return presenters.approval_body(record, run, admission)


class ApprovalDetail(APIView):
    @extend_schema(responses={200: shapes.ApprovalOut, **ERRORS})
    def get(self, request: Request, pk: UUID) -> Response:
        return Response(find_approval(principal_of(request), pk))
