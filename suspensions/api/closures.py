"""T10 over HTTP: an operator closes an uncertain start; anyone in scope reads the receipt."""

from datetime import datetime
from typing import Any
from uuid import UUID

from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import digests, presenters, services
from .authentication import principal_of
from .fields import StrictInt, StrictStr
from .serializers import ClaimVersion, Strict
from .shapes import ClosureReceiptOut
from .views import ERRORS, created, validated, version_of


class AwareDateTime(serializers.DateTimeField):
    """RFC 3339 with an explicit offset: a proof's window must not depend on the server's time zone."""

    def to_internal_value(self, value: Any) -> datetime:
        try:
            parsed = parse_datetime(value) if isinstance(value, str) else None
        except ValueError:
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            raise serializers.ValidationError("Give an RFC 3339 time with its offset, e.g. 2026-01-01T12:00:00Z.")
        moment = digests.utc_or_none(parsed)
        if moment is None:
            # 0001-01-01T00:00:00+01:00 is a valid RFC 3339 time whose UTC instant falls before year 1.
            raise serializers.ValidationError("The time falls outside years 1 to 9999 in UTC.")
        return moment


def digest_field() -> StrictStr:
    return StrictStr(validators=[digests.HEX_SHA256])


class Close(Strict):
    """DESIGN §7; unknown keys (an `actor`, say) are refused: the actor is the authenticated operator."""

    schema_version = StrictInt(min_value=1, max_value=services.closure.SCHEMA_VERSION)
    version = ClaimVersion()
    admission_digest = digest_field()
    start_digest = digest_field()
    run_revision = StrictInt(min_value=1)
    issuer = StrictStr(max_length=200)
    issuer_revision = StrictStr(max_length=200)
    proof_ref = StrictStr(max_length=2000)
    proof_digest = digest_field()
    observed_at = AwareDateTime()
    expires_at = AwareDateTime()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["expires_at"] <= attrs["observed_at"]:
            raise serializers.ValidationError({"expires_at": ["Must be after observed_at."]})
        return attrs


def closure_request(data: dict[str, Any]) -> services.ClosureRequest:
    return services.ClosureRequest(**{**data, "version": version_of(data)})


class RunClosures(APIView):
    @extend_schema(request=Close, responses={200: ClosureReceiptOut, 201: ClosureReceiptOut, **ERRORS})
    def post(self, request: Request, pk: UUID) -> Response:
        data = validated(Close, request)
        # close_run itself refuses a version naming another run than the path's.
        closed = services.close_run(principal=principal_of(request), run_id=pk, request=closure_request(data))
        return created(presenters.closure_receipt(closed.receipt, fresh=closed.fresh), closed.fresh)


class RunClosure(APIView):
    @extend_schema(responses={200: ClosureReceiptOut, **ERRORS})
    def get(self, request: Request, pk: UUID, suspension_id: UUID) -> Response:
        receipt = services.closure_of(principal=principal_of(request), run_id=pk, suspension_id=suspension_id)
        return Response(presenters.closure_receipt(receipt, fresh=False))
