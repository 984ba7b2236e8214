"""Early results and callback URLs over HTTP
(docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"): two ways a tool result reaches its
pause."""

from typing import Any, NoReturn
from uuid import UUID

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import services
from ..exceptions import NotFound
from ..wire import requests
from ..wire.answers import ClaimedOut, EarlyOut
from ..wire.base import given
from . import docs
from .authentication import principal_of
from .views import CLAIMED, claim_version, created, drift_guard, parsed


class EarlyResults(APIView):
    @extend_schema(
        **docs.operation("keep_early_result", request=requests.KeepEarlyResult, ok={200: EarlyOut, 201: EarlyOut})
    )
    def post(self, request: Request, pk: UUID) -> Response:
        body = parsed(requests.KeepEarlyResult, request)
        kept = services.keep_early_result(
            principal=principal_of(request),
            run_id=pk,
            call_id=body.call_id,
            content=body.content,
            ttl_seconds=given(body.ttl_seconds, None),
        )
        return created(EarlyOut.of(kept), kept.fresh)


class Callback(APIView):
    """The URL is the capability: no token is read, and every refusal of the URL itself is a 404."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes: list[Any] = []

    @extend_schema(**docs.operation("resume_by_callback", request=requests.Resume, ok=CLAIMED))
    def post(self, request: Request, token: str) -> Response:
        services.callbacks.grant_of(token)  # a token that does not hold is a 404 before the body is read
        body = parsed(requests.Resume, request)
        claimed = services.resume_by_callback(
            token=token, version=claim_version(body.version), results=request.data["results"], **drift_guard(body)
        )
        return created(ClaimedOut.of(claimed), claimed.fresh)

    @extend_schema(exclude=True)
    def refuse(self, request: Request, *args: Any, **kwargs: Any) -> NoReturn:
        """Any other method: the URL names nothing else (404, not 405)."""
        raise NotFound("no such callback")

    get = put = patch = delete = options = head = refuse  # type: ignore[assignment]
