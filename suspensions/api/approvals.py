"""One approval, pending or decided, with what was asked (DESIGN §15, last paragraph)."""

from typing import Any
from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import presenters, selectors
from ..exceptions import Forbidden, NotFound
from ..models import AdmissionSource, ApprovalStatus
from ..principals import Principal
from .authentication import principal_of
from .serializers import VersionOut
from .views import ERRORS


class AskedCallOut(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    arguments = serializers.CharField(help_text="The arguments as the model wrote them: a string holding JSON.")


class ApprovalOut(serializers.Serializer):
    suspension_id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    scope = serializers.CharField()
    agent_id = serializers.CharField()
    status = serializers.ChoiceField(choices=ApprovalStatus.choices)
    calls = AskedCallOut(many=True, help_text="The tool calls that were asked, kept after the pause is gone.")
    requested_by = serializers.CharField(help_text="The principal that stored the pause.")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    decided_by = serializers.CharField(help_text="Empty while pending and when nobody answered.")
    note = serializers.CharField(help_text="The approver's note, or the reason of a denial.")
    resolved_at = serializers.DateTimeField(allow_null=True)
    admission_id = serializers.UUIDField(allow_null=True, help_text="The admission an approval created.")
    run_state = serializers.CharField(allow_null=True)
    version = VersionOut(allow_null=True, help_text="The claim version to decide with; null once decided.")


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
    @extend_schema(responses={200: ApprovalOut, **ERRORS})
    def get(self, request: Request, pk: UUID) -> Response:
        return Response(find_approval(principal_of(request), pk))
