"""A2A push subscriptions (docs/api.md, "A2A"): a client's TaskPushNotificationConfig on a task, kept as a
webhook endpoint of format `a2a` bound to the task's run, so the one signed webhook sender delivers it (the
outbox, retries, signing and delivery records of docs/api.md, "8. Push: webhooks").

Whoever reads the task (approval_reads.find_approval) reads its subscriptions; an approver of its scope creates
and deletes them. Every field is checked before the first write (the URL as a webhook endpoint's own,
webhooks.check_url), so a refusal leaves nothing behind.
"""

import json
import logging
import uuid
from typing import Any

from django.db import transaction

from ..approval_reads import find_approval
from ..clock import db_now
from ..exceptions import Forbidden, InvalidRequest, NotFound
from ..models import Role, WebhookEndpoint, WebhookFormat
from ..principals import Principal
from ..wire.answers import ApprovalOut
from . import a2a_notices, webhooks

log = logging.getLogger("suspensions.webhooks")

MAX_ID = 200
MAX_TOKEN = 1000
MAX_SCHEME = 100
MAX_CREDENTIALS = 2000
TOKEN_HEADER = "X-A2A-Notification-Token"


def _too_long(field: str, value: str, limit: int) -> None:
    if len(value) > limit:
        raise InvalidRequest(f"{field} is too long", errors={field: [f"At most {limit} characters."]})


def check_headers(token: str, scheme: str, credentials: str) -> dict[str, str]:
    """The headers each notification carries: the token, and the authentication as `Authorization`."""
    _too_long("token", token, MAX_TOKEN)
    _too_long("authentication.scheme", scheme, MAX_SCHEME)
    _too_long("authentication.credentials", credentials, MAX_CREDENTIALS)
    said = {"token": token, "authentication.scheme": scheme, "authentication.credentials": credentials}
    for field, value in said.items():
        if any(c in value for c in "\r\n\0") or not value.isprintable():
            raise InvalidRequest(f"{field} is not a header value", errors={field: ["Printable characters only."]})
    if credentials and not scheme:
        raise InvalidRequest("authentication needs its scheme", errors={"authentication.scheme": ["Name it."]})
    headers = {TOKEN_HEADER: token} if token else {}
    if scheme and credentials:
        headers["Authorization"] = f"{scheme} {credentials}"
    return headers


def task(principal: Principal, task_id: str) -> ApprovalOut:
    """The task's approval as its reader sees it; 404 for an id that names no task the principal sees."""
    try:
        return find_approval(principal, uuid.UUID(task_id))
    except ValueError:
        raise NotFound(f"approval {task_id} not found") from None


def subscriptions(principal: Principal, task_id: str) -> list[WebhookEndpoint]:
    """The task's subscriptions, oldest first."""
    found = task(principal, task_id)
    rows = WebhookEndpoint.objects.filter(task_id=found.suspension_id, format=WebhookFormat.A2A)
    return list(rows.order_by("created_at"))


def scheme_of(endpoint: WebhookEndpoint) -> str:
    """The authentication scheme the subscription sends (shown), never its credentials or token (not shown)."""
    authorization = json.loads(endpoint.notify_headers or "{}").get("Authorization", "")
    return str(authorization.split(" ", 1)[0])


def subscription(principal: Principal, task_id: str, config_id: str) -> WebhookEndpoint:
    for row in subscriptions(principal, task_id):
        if row.config_id == config_id:
            return row
    raise NotFound(f"push notification config {config_id} not found")


def subscribe(
    *, principal: Principal, task_id: str, config_id: str, url: str, token: str = "", auth: tuple[str, str] = ("", "")
) -> WebhookEndpoint:
    """Store (or, for a config id the task has, replace) the task's subscription; every check before a write."""
    found = task(principal, task_id)
    if not principal.can(Role.APPROVER, found.scope):
        raise Forbidden(f"the 'approver' role is required in scope '{found.scope}'")
    _too_long("id", config_id, MAX_ID)
    config_id = config_id or str(uuid.uuid4())
    webhooks.check_url(url)
    headers = json.dumps(check_headers(token, *auth))
    fields: dict[str, Any] = {"url": url, "notify_headers": headers, "active": True, "disabled_reason": ""}
    with transaction.atomic():
        query = WebhookEndpoint.objects.filter(task_id=found.suspension_id, config_id=config_id)
        endpoint = query.select_for_update().first()
        if endpoint is None:
            endpoint = _new(principal, found, config_id, fields)
        else:
            for name, value in fields.items():
                setattr(endpoint, name, value)
            endpoint.save(update_fields=list(fields))
        _logged("subscribed", principal, endpoint)
    return endpoint


def _new(principal: Principal, found: ApprovalOut, config_id: str, fields: dict[str, Any]) -> WebhookEndpoint:
    endpoint = WebhookEndpoint(
        run_id=found.run_id,
        task_id=found.suspension_id,
        config_id=config_id,
        format=WebhookFormat.A2A,
        event_types=[str(t) for t in a2a_notices.TYPES],
        description=f"A2A push for task {found.suspension_id}",
        # The Standard Webhooks signature of every notification; A2A has no field to hand it to the client,
        # which authenticates a notification by its own token (docs/api.md, "A2A").
        secret=webhooks.new_secret(),
        created_by=principal.name,
        created_at=db_now(),
        **fields,
    )
    endpoint.stamp_scope(found.scope)
    endpoint.save(force_insert=True)
    return endpoint


def unsubscribe(principal: Principal, task_id: str, config_id: str) -> None:
    """Delete the subscription (its pending messages with it: nothing more is sent)."""
    found = task(principal, task_id)
    if not principal.can(Role.APPROVER, found.scope):
        raise Forbidden(f"the 'approver' role is required in scope '{found.scope}'")
    with transaction.atomic():
        endpoint = subscription(principal, task_id, config_id)
        _logged("unsubscribed", principal, endpoint)
        endpoint.delete()


def _logged(change: str, principal: Principal, endpoint: WebhookEndpoint) -> None:
    """One INFO line once the change commits; never the URL (it may hold a receiver's token) nor the headers."""
    fields = {"a2a_push": change, "endpoint_id": str(endpoint.id), "task_id": str(endpoint.task_id)}
    fields |= {"scope": endpoint.scope, "actor": principal.name}
    transaction.on_commit(lambda: log.info("a2a push %s %s", change, fields["endpoint_id"], extra=fields))
