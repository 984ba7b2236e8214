"""T10 over HTTP: an operator closes an uncertain start; anyone in scope reads the receipt."""

from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import services
from ..wire import requests
from ..wire.answers import ClosureReceiptOut
from . import docs
from .authentication import principal_of
from .views import claim_version, created, parsed


def closure_request(body: requests.Close) -> services.ClosureRequest:
    return services.ClosureRequest(**{**dict(body), "version": claim_version(body.version)})


class RunClosures(APIView):
    @extend_schema(
        **docs.operation("close_run", request=requests.Close, ok={200: ClosureReceiptOut, 201: ClosureReceiptOut})
    )
    def post(self, request: Request, pk: UUID) -> Response:
        body = parsed(requests.Close, request)
        # close_run itself refuses a version naming another run than the path's.
        closed = services.close_run(principal=principal_of(request), run_id=pk, request=closure_request(body))
        return created(ClosureReceiptOut.of(closed.receipt, fresh=closed.fresh), closed.fresh)


class RunClosure(APIView):
    @extend_schema(**docs.operation("get_closure_receipt", ok={200: ClosureReceiptOut}))
    def get(self, request: Request, pk: UUID, suspension_id: UUID) -> Response:
        receipt = services.closure_of(principal=principal_of(request), run_id=pk, suspension_id=suspension_id)
        return Response(ClosureReceiptOut.of(receipt, fresh=False).wire())
