"""T10 over HTTP: an operator closes an uncertain start; anyone in scope reads the receipt."""

from typing import Any
from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import digests, presenters, services
from . import docs
from .authentication import principal_of
from .fields import AwareDateTime, ShownStr, StrictInt, StrictStr
from .serializers import ClaimVersion, Strict
from .shapes import ClosureReceiptOut
from .views import created, validated, version_of


def digest_field(help_text: str) -> StrictStr:
    return StrictStr(validators=[digests.HEX_SHA256], help_text=help_text)


class Close(Strict):
    """The closure request (docs/api.md, "7.6 Closure of an uncertain start"); unknown keys (an `actor`, say) are
    refused: the actor is the authenticated operator."""

    schema_version = StrictInt(min_value=1, max_value=services.closure.SCHEMA_VERSION, help_text="`1`.")
    version = ClaimVersion(help_text="The latest admission's `version`.")
    admission_digest = digest_field("The latest admission's `request_digest`.")
    start_digest = digest_field("The latest admission's start receipt `digest`.")
    run_revision = StrictInt(min_value=1, help_text="The run's current `revision`.")
    issuer = ShownStr(max_length=200, help_text="Who issued the proof (a runbook, a tool).")
    issuer_revision = ShownStr(max_length=200, help_text="The issuer's version.")
    proof_ref = ShownStr(max_length=2000, help_text="Where the proof is (an incident, a log link).")
    proof_digest = digest_field("Lowercase hex SHA-256 of the proof.")
    observed_at = AwareDateTime(help_text="When the proof was observed; not after now. RFC 3339 with an offset.")
    expires_at = AwareDateTime(help_text="Until when the proof holds; after now and after `observed_at`.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["expires_at"] <= attrs["observed_at"]:
            raise serializers.ValidationError({"expires_at": ["Must be after observed_at."]})
        return attrs


def closure_request(data: dict[str, Any]) -> services.ClosureRequest:
    return services.ClosureRequest(**{**data, "version": version_of(data)})


class RunClosures(APIView):
    @extend_schema(**docs.operation("close_run", request=Close, ok={200: ClosureReceiptOut, 201: ClosureReceiptOut}))
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(Close, request)
        # close_run itself refuses a version naming another run than the path's.
        closed = services.close_run(principal=principal_of(request), run_id=pk, request=closure_request(data))
        return created(presenters.closure_receipt(closed.receipt, fresh=closed.fresh), closed.fresh)


class RunClosure(APIView):
    @extend_schema(**docs.operation("get_closure_receipt", ok={200: ClosureReceiptOut}))
    def get(self, request: Request, pk: UUID, suspension_id: UUID) -> Response:
        receipt = services.closure_of(principal=principal_of(request), run_id=pk, suspension_id=suspension_id)
        return Response(presenters.closure_receipt(receipt, fresh=False))
