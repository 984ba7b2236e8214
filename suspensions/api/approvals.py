"""One approval, pending or decided, with what was asked (docs/policies.md, "Reading an approval"; read in
approval_reads.py)."""

from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..approval_reads import find_approval
from ..wire.answers import ApprovalOut
from . import docs
from .authentication import principal_of


class ApprovalDetail(APIView):
    @extend_schema(**docs.operation("get_approval", ok={200: ApprovalOut}))
    def get(self, request: Request, pk: UUID) -> Response:
        return Response(find_approval(principal_of(request), pk).wire())
