"""Webhook endpoints over HTTP (docs/api.md, "7.8 Webhooks"): the operator's routes; every write is one service call."""

from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import selectors
from ..models import WebhookEndpoint, WebhookMessage
from ..services import webhooks
from ..wire import requests_operators as requests
from ..wire.answers_operators import WebhookEndpointOut, WebhookEndpointSecretOut, WebhookMessageOut
from ..wire.base import given
from . import docs
from .authentication import principal_of
from .idempotency import idempotent
from .views import parsed

ACCEPTED = {202: WebhookMessageOut}
SECRET_WITHHELD = (
    "This is a replay, and the secret its first answer showed no longer signs this endpoint's messages (it was "
    "rotated since): it is withheld. Rotate the secret to get a new one."
)


def current_secret_only(status: int, body: dict[str, Any]) -> dict[str, Any]:
    """A replayed create or rotation shows its secret only while it is still the endpoint's (docs/api.md, §4)."""
    if webhooks.is_current_secret(endpoint_id=body["id"], secret=body["secret"]):
        return body
    return {**body, "secret": None, "secret_withheld": SECRET_WITHHELD}


@extend_schema_view(get=extend_schema(**docs.operation("list_webhooks", ok={200: WebhookEndpointOut})))
class WebhookList(generics.ListAPIView):
    """The endpoints of the caller's operator scopes, newest first (403 without the role anywhere)."""

    def get_queryset(self) -> QuerySet[WebhookEndpoint]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no principal
            return WebhookEndpoint.objects.none()
        principal = principal_of(self.request)
        webhooks.require_operator(principal)
        return selectors.webhook_endpoints(principal)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([WebhookEndpointOut.of(e).wire() for e in page or []])

    @extend_schema(
        **docs.operation("create_webhook", request=requests.CreateWebhook, ok={201: WebhookEndpointSecretOut})
    )
    @idempotent(replay=current_secret_only)
    def post(self, request: Request) -> Response:
        body = parsed(requests.CreateWebhook, request)
        endpoint, secret = webhooks.create_endpoint(
            principal=principal_of(request),
            scope=given(body.scope, None),
            url=body.url,
            event_types=body.event_types,
            format=body.format,
            description=body.description,
        )
        return Response(WebhookEndpointSecretOut.of_new(endpoint, secret).wire(), status=201)


class WebhookDetail(APIView):
    @extend_schema(**docs.operation("get_webhook", ok={200: WebhookEndpointOut}))
    def get(self, request: Request, pk: UUID) -> Response:
        return Response(WebhookEndpointOut.of(webhooks.endpoint_of(principal_of(request), pk)).wire())


class DisableWebhook(APIView):
    @extend_schema(**docs.operation("disable_webhook", ok={200: WebhookEndpointOut}))
    @idempotent
    def post(self, request: Request, pk: UUID) -> Response:
        endpoint = webhooks.disable_endpoint(principal=principal_of(request), endpoint_id=pk)
        return Response(WebhookEndpointOut.of(endpoint).wire())


class EnableWebhook(APIView):
    @extend_schema(**docs.operation("enable_webhook", ok={200: WebhookEndpointOut}))
    @idempotent
    def post(self, request: Request, pk: UUID) -> Response:
        endpoint = webhooks.enable_endpoint(principal=principal_of(request), endpoint_id=pk)
        return Response(WebhookEndpointOut.of(endpoint).wire())


class RotateWebhookSecret(APIView):
    @extend_schema(**docs.operation("rotate_webhook_secret", ok={200: WebhookEndpointSecretOut}))
    @idempotent(replay=current_secret_only)
    def post(self, request: Request, pk: UUID) -> Response:
        endpoint, secret = webhooks.rotate_secret(principal=principal_of(request), endpoint_id=pk)
        return Response(WebhookEndpointSecretOut.of_new(endpoint, secret).wire())


class TestWebhook(APIView):
    @extend_schema(**docs.operation("test_webhook", ok=ACCEPTED))
    @idempotent
    def post(self, request: Request, pk: UUID) -> Response:
        message = webhooks.send_test(principal=principal_of(request), endpoint_id=pk)
        return Response(WebhookMessageOut.of(message).wire(), status=202)


@extend_schema_view(get=extend_schema(**docs.operation("list_webhook_messages", ok={200: WebhookMessageOut})))
class WebhookMessages(generics.ListAPIView):
    """The endpoint's messages, newest first, each with its attempts."""

    def get_queryset(self) -> QuerySet[WebhookMessage]:
        if getattr(self, "swagger_fake_view", False):
            return WebhookMessage.objects.none()
        principal = principal_of(self.request)
        endpoint = webhooks.endpoint_of(principal, self.kwargs["pk"])
        return selectors.webhook_messages(principal, endpoint.id)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([WebhookMessageOut.of(m).wire() for m in page or []])


class RedeliverMessage(APIView):
    @extend_schema(**docs.operation("redeliver_webhook_message", ok=ACCEPTED))
    @idempotent
    def post(self, request: Request, pk: UUID, message_id: UUID) -> Response:
        message = webhooks.redeliver(principal=principal_of(request), endpoint_id=pk, message_id=message_id)
        return Response(WebhookMessageOut.of(message).wire(), status=202)
