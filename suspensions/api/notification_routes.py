"""Notification routes over HTTP (docs/notifications.md, "Routes"): the operator's routes, shaped and scoped like the
webhooks'.

Every write is one service call (services/notification_routes.py); a refusal
is the service's problem+json and writes nothing.
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
from ..models import NotificationRoute
from ..services import notification_routes as routes
from ..wire import requests_operators as requests
from ..wire.answers_operators import NotificationRouteOut
from ..wire.base import given
from . import docs
from .authentication import principal_of
from .idempotency import idempotent, unless_deleted
from .views import parsed

ONE = {200: NotificationRouteOut}


@extend_schema_view(get=extend_schema(**docs.operation("list_notification_routes", ok=ONE)))
class NotificationRouteList(generics.ListAPIView):
    """The routes of the caller's operator scopes, newest first (403 without the role anywhere)."""

    def get_queryset(self) -> QuerySet[NotificationRoute]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return NotificationRoute.objects.none()
        principal = principal_of(self.request)
        routes.require_operator(principal)
        return selectors.notification_routes(principal)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([NotificationRouteOut.of(r).wire() for r in page or []])

    @extend_schema(
        **docs.operation(
            "create_notification_route", request=requests.CreateNotificationRoute, ok={201: NotificationRouteOut}
        )
    )
    @idempotent(replay=unless_deleted(NotificationRoute))
    def post(self, request: Request) -> Response:
        body = parsed(requests.CreateNotificationRoute, request)
        route = routes.create_route(
            principal=principal_of(request),
            scope=given(body.scope, None),
            kind=body.kind,
            target=body.target,
            event_types=body.event_types,
            description=body.description,
        )
        return Response(NotificationRouteOut.of(route).wire(), status=201)


class NotificationRouteDetail(APIView):
    @extend_schema(**docs.operation("get_notification_route", ok=ONE))
    def get(self, request: Request, pk: UUID) -> Response:
        return Response(NotificationRouteOut.of(routes.route_of(principal_of(request), pk)).wire())

    @extend_schema(**docs.operation("delete_notification_route", ok=ONE))
    def delete(self, request: Request, pk: UUID) -> Response:
        route = routes.delete_route(principal=principal_of(request), route_id=pk)
        return Response(NotificationRouteOut.of(route).wire())


class DisableNotificationRoute(APIView):
    @extend_schema(**docs.operation("disable_notification_route", ok=ONE))
    @idempotent(replay=unless_deleted(NotificationRoute))
    def post(self, request: Request, pk: UUID) -> Response:
        route = routes.set_active(principal=principal_of(request), route_id=pk, active=False)
        return Response(NotificationRouteOut.of(route).wire())


class EnableNotificationRoute(APIView):
    @extend_schema(**docs.operation("enable_notification_route", ok=ONE))
    @idempotent(replay=unless_deleted(NotificationRoute))
    def post(self, request: Request, pk: UUID) -> Response:
        route = routes.set_active(principal=principal_of(request), route_id=pk, active=True)
        return Response(NotificationRouteOut.of(route).wire())
