"""Legal holds over HTTP (docs/auditors.md, "Retention and legal holds"): auditors and operators list, create and
release them. Every write is one service call (services/retention.py); a refusal writes nothing."""

from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors
from ..models import LegalHold
from ..services import retention
from ..wire import requests_operators as requests
from ..wire.answers_operators import LegalHoldOut
from ..wire.base import given
from . import docs
from .authentication import principal_of
from .idempotency import idempotent
from .views import parsed

ONE = {200: LegalHoldOut}


@extend_schema_view(get=extend_schema(**docs.operation("list_legal_holds", ok=ONE)))
class LegalHoldList(generics.ListAPIView):
    """The holds of the caller's auditor and operator scopes, newest first, released ones included."""

    def get_queryset(self) -> QuerySet[LegalHold]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return LegalHold.objects.none()
        principal = principal_of(self.request)
        retention.require_holder(principal)
        return selectors.legal_holds(principal)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([LegalHoldOut.of(h).wire() for h in page or []])

    @extend_schema(**docs.operation("create_legal_hold", request=requests.CreateLegalHold, ok={201: LegalHoldOut}))
    @idempotent
    def post(self, request: Request) -> Response:
        body = parsed(requests.CreateLegalHold, request)
        hold = retention.create_hold(
            principal=principal_of(request),
            scope=given(body.scope, None),
            run_id=given(body.run, None),
            reason=body.reason,
        )
        return Response(LegalHoldOut.of(hold).wire(), status=201)


class ReleaseLegalHold(APIView):
    @extend_schema(**docs.operation("release_legal_hold", ok=ONE))
    def post(self, request: Request, pk: UUID) -> Response:
        hold = retention.release_hold(principal=principal_of(request), hold_id=pk)
        return Response(LegalHoldOut.of(hold).wire())
