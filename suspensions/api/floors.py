"""Approval floors over HTTP (issue 32, docs/policies.md "Floors"): the operator's routes, scoped like webhooks.

Every write is one service call (services/approval_floors.py); a refusal is
the service's problem+json and writes nothing.
"""

from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors
from ..models import ApprovalFloor
from ..services import approval_floors
from ..wire import requests_operators as requests
from ..wire.answers_operators import ApprovalFloorOut
from ..wire.base import given
from . import docs
from .authentication import principal_of
from .idempotency import idempotent, unless_deleted
from .views import parsed

ONE = {200: ApprovalFloorOut}


@extend_schema_view(get=extend_schema(**docs.operation("list_approval_floors", ok=ONE)))
class ApprovalFloorList(generics.ListAPIView):
    """The floors of the caller's operator scopes, newest first (403 without the role anywhere)."""

    def get_queryset(self) -> QuerySet[ApprovalFloor]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return ApprovalFloor.objects.none()
        principal = principal_of(self.request)
        approval_floors.require_operator(principal)
        return selectors.approval_floors(principal)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([ApprovalFloorOut.of(f).wire() for f in page or []])

    @extend_schema(
        **docs.operation("create_approval_floor", request=requests.CreateApprovalFloor, ok={201: ApprovalFloorOut})
    )
    @idempotent(replay=unless_deleted(ApprovalFloor))
    def post(self, request: Request) -> Response:
        body = parsed(requests.CreateApprovalFloor, request)
        values = body.model_dump(exclude={"scope"})  # the fields given: one left out is not in the dump
        floor = approval_floors.create_floor(principal=principal_of(request), scope=given(body.scope, None), **values)
        return Response(ApprovalFloorOut.of(floor).wire(), status=201)


class ApprovalFloorDetail(APIView):
    @extend_schema(**docs.operation("get_approval_floor", ok=ONE))
    def get(self, request: Request, pk: UUID) -> Response:
        return Response(ApprovalFloorOut.of(approval_floors.floor_of(principal_of(request), pk)).wire())

    @extend_schema(**docs.operation("update_approval_floor", request=requests.UpdateApprovalFloor, ok=ONE))
    def patch(self, request: Request, pk: UUID) -> Response:
        changes = parsed(requests.UpdateApprovalFloor, request).model_dump()  # the fields given, and only they
        floor = approval_floors.update_floor(principal=principal_of(request), floor_id=pk, **changes)
        return Response(ApprovalFloorOut.of(floor).wire())

    @extend_schema(**docs.operation("delete_approval_floor", ok=ONE))
    def delete(self, request: Request, pk: UUID) -> Response:
        floor = approval_floors.delete_floor(principal=principal_of(request), floor_id=pk)
        return Response(ApprovalFloorOut.of(floor).wire())
