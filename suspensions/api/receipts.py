"""Expiry receipts over HTTP: anyone in the run's scope reads the proof of a T9 expiry."""

from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors
from ..exceptions import NotFound
from ..wire.answers import ExpiryReceiptOut
from . import docs
from .authentication import principal_of


class RunExpiry(APIView):
    @extend_schema(**docs.operation("get_expiry_receipt", ok={200: ExpiryReceiptOut}))
    def get(self, request: Request, pk: UUID, suspension_id: UUID) -> Response:
        receipt = selectors.expiries(principal_of(request)).filter(run_id=pk, suspension_id=suspension_id).first()
        if receipt is None:
            raise NotFound(f"no expiry receipt for pause {suspension_id} of run {pk}")
        return Response(ExpiryReceiptOut.of(receipt).wire())
