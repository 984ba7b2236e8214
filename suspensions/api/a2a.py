"""A2A (docs/api.md, "A2A"): the Agent Card and the JSON-RPC endpoint, as views of the Django project.

The `a2a-sdk`'s own JSON-RPC dispatcher parses and validates every request with the protocol's types and
answers every fault with the protocol's error; its request handler here (`PauseHandler`) reads and decides
through the same selectors and services as the REST API (approval_reads.find_approval, services.decide,
services.cancel_run), in Django's sync thread. Why a Django view and not the SDK's Starlette app: docs/decisions.md,
"A2A inside Django".
"""

import uuid
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils import errors
from asgiref.sync import sync_to_async
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from google.protobuf import json_format
from rest_framework import exceptions as drf
from starlette.requests import Request as StarletteRequest

from .. import selectors, services
from ..approval_reads import find_approval
from ..exceptions import InvalidRequest, NotFound, ServiceError, Unauthenticated, Unavailable
from ..models import WebhookEndpoint
from ..principals import Principal
from ..problems import problem_json_response
from ..services import a2a_push
from ..wire import requests
from ..wire.answers import ApprovalOut
from . import a2a_card, views
from .a2a_tasks import task_of
from .authentication import BearerTokenAuthentication
from .decisions import paths

JSON = "application/json"


def refusal(error: ServiceError) -> errors.A2AError:
    """A service's refusal as the protocol's error: an unseen task is not found (it leaks nothing); any other
    keeps the REST API's code and status in its data."""
    if isinstance(error, NotFound):
        return errors.TaskNotFoundError()
    data: dict[str, Any] = {"code": error.code, "status": str(error.status)}
    if isinstance(error, InvalidRequest):  # the body's fault: its params, each field named as the SDK names them
        faults = paths(error.extra.get("errors", {}))
        data["errors"] = [{"field": field, "message": " ".join(said)} for field, said in faults.items()]
        return errors.InvalidParamsError(message=error.detail, data=data)
    return errors.InvalidRequestError(message=error.detail, data=data)


def task_uuid(task_id: str) -> uuid.UUID:
    """The pause a task id names; anything else is a task nobody has."""
    try:
        return uuid.UUID(task_id)
    except ValueError:
        raise errors.TaskNotFoundError() from None


def approval(principal: Principal, task_id: str) -> ApprovalOut:
    return find_approval(principal, task_uuid(task_id))


def pause_revision(principal: Principal, found: ApprovalOut) -> int:
    """The run's revision while paused on this pause: the claim version a decision names, then and on a replay."""
    if found.version is not None:
        return found.version.run_revision
    suspended = selectors.events(principal).filter(
        run_id=found.run_id, kind="suspended", data__suspension_id=str(found.suspension_id)
    )
    # Events are never deleted; were it missing, 1 matches no claim, and the claim path answers a decided pause's
    # refusal rather than this module a made-up one.
    return suspended.values_list("revision", flat=True).first() or 1


def decision_of(message: Message) -> requests.A2ADecision:
    """The message's one data part as a decision; a message without one is refused, nothing decided."""
    parts = [p for p in message.parts if p.WhichOneof("content") == "data"]
    if len(parts) != 1:
        raise errors.InvalidParamsError(
            message="Send the decision as one data part: "
            '{"decision": "approve" | "deny" | "respond", "note", "reason", "edits", "response"}. Nothing was decided.'
        )
    body = json_format.MessageToDict(parts[0].data)
    return views.parsed_data(requests.A2ADecision, body)


def decide(principal: Principal, message: Message) -> Task:
    """The message's decision on its task's pause, through the REST API's own decide: the same claim, replays
    and refusals; the task as it is afterwards."""
    if not message.task_id:
        raise errors.InvalidParamsError(message="Name the task (the pause) the message answers: message.taskId.")
    found = approval(principal, message.task_id)
    if message.context_id and message.context_id != str(found.run_id):
        raise errors.InvalidParamsError(message="message.contextId is not the task's context (its run's id).")
    decision = decision_of(message)
    version = {
        "run_id": str(found.run_id),
        "suspension_id": str(found.suspension_id),
        "run_revision": pause_revision(principal, found),
    }
    body = views.parsed_data(requests.Decide, decision.decide(version))
    views.decide(principal, found.suspension_id, body)  # the REST API's single decide: one path for both
    return task_of(approval(principal, message.task_id))


def cancel(principal: Principal, task_id: str) -> Task:
    """Cancel the run a waiting task pauses (T7, the engine's cancel); a task that no longer waits cannot be."""
    found = approval(principal, task_id)
    if task_of(found).status.state != TaskState.TASK_STATE_INPUT_REQUIRED or found.version is None:
        raise errors.TaskNotCancelableError(message=f"Task {task_id} no longer waits; it cannot be cancelled.")
    services.cancel_run(principal=principal, run_id=found.run_id, revision=found.version.run_revision)
    return task_of(approval(principal, task_id))


def push_config(row: WebhookEndpoint) -> TaskPushNotificationConfig:
    """A subscription as A2A shows it: never its token or credentials (every reader of the task sees it)."""
    scheme = a2a_push.scheme_of(row)
    config = TaskPushNotificationConfig(id=row.config_id, task_id=str(row.task_id), url=row.url)
    if scheme:
        config.authentication.scheme = scheme
    return config


def subscribe(principal: Principal, params: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    """The client's push config stored on its task (docs/api.md, "A2A"), answered as Get answers it."""
    auth = (params.authentication.scheme, params.authentication.credentials)
    row = a2a_push.subscribe(
        principal=principal, task_id=params.task_id, config_id=params.id, url=params.url, token=params.token, auth=auth
    )
    return push_config(row)


def in_sync_thread(function: Any, *args: Any) -> Any:
    """`function` in Django's sync thread, a service refusal (or a database fault) as the protocol's error."""

    def guarded() -> Any:
        try:
            return function(*args)
        except ServiceError as error:
            raise refusal(error) from None
        except DatabaseError:
            raise refusal(Unavailable()) from None

    return sync_to_async(guarded)()


class PauseHandler(RequestHandler):
    """The SDK's request handler for pauses: GetTask, CancelTask, SendMessage and the push configs; the rest are
    refused."""

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        found = await in_sync_thread(approval, context.state["principal"], params.id)
        return task_of(found)  # type: ignore[no-any-return]

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        return await in_sync_thread(cancel, context.state["principal"], params.id)  # type: ignore[no-any-return]

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        return await in_sync_thread(decide, context.state["principal"], params.message)  # type: ignore[no-any-return]

    async def on_list_tasks(self, params: Any, context: ServerCallContext) -> Any:
        raise errors.UnsupportedOperationError(message="List the pauses with GET /api/v1/approvals.")

    async def on_message_send_stream(self, params: Any, context: ServerCallContext) -> Any:
        raise errors.UnsupportedOperationError(message="Streaming is not offered: send the message with SendMessage.")
        yield  # an async generator, as the SDK calls it

    async def on_subscribe_to_task(self, params: Any, context: ServerCallContext) -> Any:
        raise errors.UnsupportedOperationError(message="Streaming is not offered: read the task with GetTask.")
        yield

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        return await in_sync_thread(subscribe, context.state["principal"], params)  # type: ignore[no-any-return]

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        principal = context.state["principal"]
        found = await in_sync_thread(a2a_push.subscription, principal, params.task_id, params.id)
        return push_config(found)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        found = await in_sync_thread(a2a_push.subscriptions, context.state["principal"], params.task_id)
        return ListTaskPushNotificationConfigsResponse(configs=[push_config(row) for row in found])

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        principal = context.state["principal"]
        await in_sync_thread(a2a_push.unsubscribe, principal, params.task_id, params.id)

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> Any:
        raise errors.ExtendedAgentCardNotConfiguredError()


class CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the principal the view authenticated."""

    def build(self, request: StarletteRequest) -> ServerCallContext:
        context = super().build(request)
        context.state["principal"] = request.scope["principal"]
        return context


dispatcher = JsonRpcDispatcher(PauseHandler(), context_builder=CallerContext(), enable_v0_3_compat=True)


def starlette_request(request: HttpRequest, body: bytes, principal: Principal) -> StarletteRequest:
    """The Django request as the dispatcher reads it: its headers and body, and the caller."""
    headers = [
        (k.lower().encode("latin-1", "replace"), v.encode("latin-1", "replace")) for k, v in request.headers.items()
    ]
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": request.path, "headers": headers}
    scope |= {"query_string": b"", "principal": principal}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    return StarletteRequest(scope, receive)


def caller(request: HttpRequest) -> Principal:
    """The bearer token's principal; 401 otherwise (no session: the endpoint takes no CSRF token)."""
    try:
        found = BearerTokenAuthentication().read(request)
    except drf.AuthenticationFailed as exc:
        raise Unauthenticated(str(exc.detail)) from None
    if found is None:
        raise Unauthenticated("send 'Authorization: Bearer <token>'")
    return found[0]


@csrf_exempt
async def endpoint(request: HttpRequest) -> HttpResponse:
    """`POST /a2a/`: one JSON-RPC request, answered by the SDK's dispatcher (a fault is a JSON-RPC error)."""
    if request.method != "POST":
        return JsonResponse({"detail": "POST a JSON-RPC request."}, status=405, headers={"Allow": "POST"})
    try:
        principal = await sync_to_async(caller)(request)
        body = request.body
    except ServiceError as error:
        return problem_json_response(error)
    except RequestDataTooBig:
        too_large = errors.InvalidRequestError(message="Payload too large")
        return JsonResponse(build_error_response(None, too_large))
    answer = await dispatcher.handle_requests(starlette_request(request, body, principal))
    return HttpResponse(getattr(answer, "body", b""), status=answer.status_code, content_type=JSON)


def agent_card(request: HttpRequest) -> HttpResponse:
    """`GET /.well-known/agent-card.json`: the Agent Card, public."""
    if request.method not in ("GET", "HEAD"):
        return JsonResponse({"detail": "GET the card."}, status=405, headers={"Allow": "GET, HEAD"})
    return JsonResponse(a2a_card.card(request))
