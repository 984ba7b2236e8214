"""Roles from the identity provider's groups over HTTP (docs/identity.md, "How roles map"): the operators' role
mappings, and the record of role changes for auditors.

Every write is one service call (services/role_mappings.py); a refusal is the
service's problem+json and writes nothing.
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
from ..exceptions import Forbidden
from ..models import Role, RoleChange, RoleMapping
from ..services import role_mappings
from ..services.webhooks import require_operator
from ..wire.base import given
from ..wire.identity import CreateRoleMapping, RoleChangeOut, RoleMappingOut
from . import docs
from .authentication import principal_of
from .idempotency import idempotent, unless_deleted
from .views import parsed

ONE = {200: RoleMappingOut}


@extend_schema_view(get=extend_schema(**docs.operation("list_role_mappings", ok=ONE)))
class RoleMappingList(generics.ListAPIView):
    """The mappings of the caller's operator scopes, newest first (403 without the role anywhere)."""

    def get_queryset(self) -> QuerySet[RoleMapping]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return RoleMapping.objects.none()
        principal = principal_of(self.request)
        require_operator(principal)
        return selectors.role_mappings(principal)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([RoleMappingOut.of(m).wire() for m in page or []])

    @extend_schema(**docs.operation("create_role_mapping", request=CreateRoleMapping, ok={201: RoleMappingOut}))
    @idempotent(replay=unless_deleted(RoleMapping))
    def post(self, request: Request) -> Response:
        body = parsed(CreateRoleMapping, request)
        mapping = role_mappings.create_mapping(
            principal=principal_of(request), group=body.group, scope=given(body.scope, None), role=body.role
        )
        return Response(RoleMappingOut.of(mapping).wire(), status=201)


class RoleMappingDetail(APIView):
    @extend_schema(**docs.operation("get_role_mapping", ok=ONE))
    def get(self, request: Request, pk: UUID) -> Response:
        return Response(RoleMappingOut.of(role_mappings.mapping_of(principal_of(request), pk)).wire())

    @extend_schema(**docs.operation("delete_role_mapping", ok=ONE))
    def delete(self, request: Request, pk: UUID) -> Response:
        mapping = role_mappings.delete_mapping(principal=principal_of(request), mapping_id=pk)
        return Response(RoleMappingOut.of(mapping).wire())


@extend_schema_view(get=extend_schema(**docs.operation("list_role_changes", ok={200: RoleChangeOut})))
class RoleChangeList(generics.ListAPIView):
    """Provider-given role changes in the caller's auditor or operator scopes, newest first."""

    def get_queryset(self) -> QuerySet[RoleChange]:
        if getattr(self, "swagger_fake_view", False):
            return RoleChange.objects.none()
        principal = principal_of(self.request)
        if not principal.superuser and not principal.scopes_with(Role.AUDITOR, Role.OPERATOR):
            raise Forbidden("the 'auditor' or 'operator' role is required")
        return selectors.role_changes(principal)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([RoleChangeOut.of(c).wire() for c in page or []])
