"""Delegations over HTTP (docs/api.md, "Delegation"; docs/identity.md, "Delegation"): create, list, read, end.

Every write is one service call (services/delegations.py); a refusal is the
service's problem+json and writes nothing. A person sees the delegations they
gave or hold; an operator also those of their operator scopes.
"""

from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ..models import Delegation
from ..services import delegations
from ..wire import requests_operators as requests
from ..wire.answers_operators import DelegationOut
from ..wire.base import given
from . import docs
from .authentication import principal_of
from .views import parsed

ONE = {200: DelegationOut}


@extend_schema_view(get=extend_schema(**docs.operation("list_delegations", ok=ONE)))
class DelegationList(generics.ListAPIView):
    """The caller's delegations and those of their operator scopes, newest first."""

    def get_queryset(self) -> QuerySet[Delegation]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return Delegation.objects.none()
        return delegations.delegations(principal_of(self.request)).order_by("-created_at", "-id")

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page, now = self.paginate_queryset(self.get_queryset()), timezone.now()
        return self.get_paginated_response([DelegationOut.of(d, now).wire() for d in page or []])

    @extend_schema(**docs.operation("create_delegation", request=requests.CreateDelegation, ok={201: DelegationOut}))
    def post(self, request: Request) -> Response:
        body = parsed(requests.CreateDelegation, request)
        row = delegations.create_delegation(
            principal=principal_of(request),
            from_=given(body.from_, None),
            to=body.to,
            scope=body.scope,
            starts_at=given(body.starts_at, None),
            ends_at=body.ends_at,
            reason=body.reason,
        )
        return Response(DelegationOut.of(row, timezone.now()).wire(), status=201)


class DelegationDetail(APIView):
    @extend_schema(**docs.operation("get_delegation", ok=ONE))
    def get(self, request: Request, pk: UUID) -> Response:
        row = delegations.delegation_of(principal_of(request), pk)
        return Response(DelegationOut.of(row, timezone.now()).wire())


class EndDelegation(APIView):
    @extend_schema(**docs.operation("end_delegation", ok=ONE))
    def post(self, request: Request, pk: UUID) -> Response:
        row = delegations.end_delegation(principal=principal_of(request), delegation_id=pk)
        return Response(DelegationOut.of(row, timezone.now()).wire())
