"""Correlation-keyed waits over HTTP (docs/api.md, "7.7 Flow waits (correlation-keyed)"): engines park a flow's wait,
the bus resumes it."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import services
from ..models import Reason
from ..wire.answers import ClaimedOut, ParkedWaitOut
from . import docs
from .authentication import principal_of
from .fields import AnyJSON, JSONObject, ShownStr, StrictInt, StrictStr, Tags
from .idempotency import idempotent
from .serializers import Strict
from .views import created, validated


def part(max_length: int = 200, **options: Any) -> StrictStr:
    # Envelope parts are key material: a trimmed space would be another key. They name the wait to a
    # person too (its agent is `pack/flow`): no control characters (suspensions/display.py).
    return ShownStr(max_length=max_length, trim_whitespace=False, **options)


def optional_part(max_length: int = 200) -> StrictStr:
    return part(max_length, required=False, allow_null=True, allow_blank=True)


class FlowEnvelope(Strict):
    """Where the flow step came from; whitespace is kept (the parts are key material)."""

    tenant = part(63, help_text="With `env`, the wait's scope `tenant/env`: a scope segment.")
    env = part(63, help_text="The environment, e.g. `prod`: the second segment of the scope.")
    provider = part(allow_blank=True)
    channel = part(allow_blank=True)
    conversation = part(allow_blank=True)
    user = part(allow_blank=True)
    session_hint = optional_part(900)
    pack = part(100)
    flow = part(100)
    thread = optional_part()
    reply_to = optional_part()


class ParkFlowWaitIn(Strict):
    envelope = FlowEnvelope()
    snapshot = JSONObject(help_text="The flow's state, returned unchanged by the fresh start.")
    reason = serializers.ChoiceField(choices=Reason.choices)
    ttl_seconds = StrictInt(
        required=False,
        min_value=0,
        max_value=10 * 365 * 86400,
        help_text="As for suspend: 0 means no deadline; absent means the default (86400).",
    )
    decision_token = part(
        1024, required=False, help_text="Required for `reason: approval`: a secret the approver's side holds."
    )
    tags = Tags()


class DispatchResumeIn(Strict):
    tenant = part(63, help_text="With `env`, the wait's scope `tenant/env`.")
    env = part(63, help_text="The second segment of the wait's scope.")
    correlation_id = part(1024, help_text="The `correlation_id` the park answered, nonce included.")
    output = AnyJSON(allow_null=True, help_text="Any JSON; its canonical JSON is the admitted input.")
    decision_token = part(1024, required=False, help_text="An approval wait's token, given at park time.")


class ParkFlowWait(APIView):
    @extend_schema(**docs.operation("park_flow_wait", request=ParkFlowWaitIn, ok={201: ParkedWaitOut}))
    @idempotent
    def post(self, request: Request) -> Response:
        data = validated(ParkFlowWaitIn, request)
        parked = services.park_flow_wait(
            principal=principal_of(request),
            envelope=services.Envelope(**data["envelope"]),
            snapshot=data["snapshot"],
            reason=data["reason"],
            ttl_seconds=data.get("ttl_seconds"),
            decision_token=data.get("decision_token"),
            tags=data.get("tags", ()),
        )
        return Response(ParkedWaitOut.of(parked).wire(), status=201)


class DispatchResume(APIView):
    @extend_schema(
        **docs.operation("resume_flow_wait", request=DispatchResumeIn, ok={200: ClaimedOut, 201: ClaimedOut})
    )
    def post(self, request: Request) -> Response:
        data = validated(DispatchResumeIn, request)
        claimed = services.resume_flow_wait(principal=principal_of(request), **data)
        return created(ClaimedOut.of(claimed), claimed.fresh)
