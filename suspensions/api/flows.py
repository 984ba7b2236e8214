"""Correlation-keyed waits over HTTP (docs/api.md, "7.7 Flow waits (correlation-keyed)"): engines park a flow's wait,
the bus resumes it."""

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import services
from ..wire import requests_flows as requests
from ..wire.answers import ClaimedOut, ParkedWaitOut
from ..wire.base import given
from . import docs
from .authentication import principal_of
from .idempotency import idempotent
from .views import created, parsed


class ParkFlowWait(APIView):
    @extend_schema(**docs.operation("park_flow_wait", request=requests.ParkFlowWaitIn, ok={201: ParkedWaitOut}))
    @idempotent
    def post(self, request: Request) -> Response:
        body = parsed(requests.ParkFlowWaitIn, request)
        parked = services.park_flow_wait(
            principal=principal_of(request),
            envelope=services.Envelope(**body.envelope.model_dump()),  # the parts given: one left out is not dumped
            snapshot=body.snapshot,
            reason=body.reason,
            ttl_seconds=given(body.ttl_seconds, None),
            decision_token=given(body.decision_token, None),
            tags=given(body.tags, ()),
        )
        return Response(ParkedWaitOut.of(parked).wire(), status=201)


class DispatchResume(APIView):
    @extend_schema(
        **docs.operation("resume_flow_wait", request=requests.DispatchResumeIn, ok={200: ClaimedOut, 201: ClaimedOut})
    )
    def post(self, request: Request) -> Response:
        body = parsed(requests.DispatchResumeIn, request)
        claimed = services.resume_flow_wait(
            principal=principal_of(request),
            tenant=body.tenant,
            env=body.env,
            correlation_id=body.correlation_id,
            output=body.output,
            decision_token=given(body.decision_token, None),
        )
        return created(ClaimedOut.of(claimed), claimed.fresh)
