"""Webhook endpoints (docs/api.md, "7.8 Webhooks"): operators create, disable, enable, re-key, test and redeliver.

Endpoints are configuration, not run state: nothing here takes a run lock or
writes an Event; each change is one transaction that locks the one endpoint or
message row it changes, logs one INFO line on commit, and hands deliveries to
the delivery task on commit (outbox.enqueue_delivery, STYLE rule 17). Every
input is checked before the first write, so a refusal leaves nothing behind.
Where an endpoint's address resolves is checked at delivery time, not here:
DNS answers change.

The API and the console both call these functions.
"""

import base64
import hmac
import logging
import secrets
from datetime import timedelta
from typing import Any, TypeVar
from urllib.parse import urlsplit
from uuid import UUID

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import models, transaction
from django.db.models import QuerySet

from .. import presenters, scopes, selectors
from ..clock import db_now
from ..exceptions import Forbidden, InvalidRequest, InvalidState, NotFound
from ..models import (
    OPERATOR_WEBHOOK_FORMATS,
    WEBHOOK_EVENT_TYPES,
    MessageStatus,
    OutboxEvent,
    Role,
    WebhookEndpoint,
    WebhookFormat,
    WebhookMessage,
)
from ..principals import Principal
from . import outbox

log = logging.getLogger("suspensions.webhooks")

EVENT_TYPES = WEBHOOK_EVENT_TYPES
SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
# docs/api.md, "7.8 Webhooks": after a rotation the old secret keeps signing beside the new one for a day.
ROTATION_GRACE = timedelta(hours=24)
MAX_URL = 2000
MAX_DESCRIPTION = 500

Row = TypeVar("Row", bound=models.Model)


def new_secret() -> str:
    """A Standard Webhooks signing secret: `whsec_` and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


# -- validation (before any write) -------------------------------------------------------------


def check_url(url: str) -> str:
    """http(s), well formed, at most 2000 characters, no credentials; 400 invalid_request otherwise."""
    problem = _url_problem(url)
    if problem:
        raise InvalidRequest(f"url is not usable: {problem}", errors={"url": [problem]})
    return url


def _url_problem(url: Any) -> str:
    if not isinstance(url, str) or not url:
        return "Give the endpoint's URL."
    if len(url) > MAX_URL:
        return f"At most {MAX_URL} characters."
    try:
        parts = urlsplit(url)
    except ValueError:
        return "Not a well-formed URL."
    if parts.scheme not in ("http", "https"):
        return "Only http and https URLs are allowed."
    # Credentials in a URL end up in logs and in the admin: put them in the receiver's own check instead.
    if parts.username is not None or parts.password is not None:
        return "A URL may not carry a user name or password."
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        return "Not a well-formed URL."
    return ""


def check_event_types(event_types: Any, known: tuple[str, ...] = EVENT_TYPES) -> list[str]:
    """Types among `known`, each once; an empty list means every type."""
    if not isinstance(event_types, list) or not all(isinstance(t, str) for t in event_types):
        raise InvalidRequest("event_types must be a list of strings", errors={"event_types": ["Expected a list."]})
    unknown = [t for t in event_types if t not in known]
    if unknown:
        detail = f"Unknown event types: {', '.join(unknown)}. Known: {', '.join(known)}."
        raise InvalidRequest("event_types names an unknown type", errors={"event_types": [detail]})
    if len(set(event_types)) != len(event_types):
        raise InvalidRequest("event_types repeats a type", errors={"event_types": ["Name each type once."]})
    return list(event_types)


def _check_fields(scope: Any, url: Any, event_types: Any, format: Any, description: Any) -> list[str]:
    if not isinstance(scope, str) or not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    check_url(url)
    types = check_event_types(event_types)
    if format not in OPERATOR_WEBHOOK_FORMATS:
        raise InvalidRequest("format is unknown", errors={"format": [f"One of {', '.join(OPERATOR_WEBHOOK_FORMATS)}."]})
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise InvalidRequest("description is too long", errors={"description": [f"At most {MAX_DESCRIPTION}."]})
    return types


def require_operator(principal: Principal) -> None:
    """403 for a principal that is an operator nowhere: the webhook routes are theirs alone."""
    if not principal.superuser and not principal.scopes_with(Role.OPERATOR):
        raise Forbidden("the 'operator' role is required")


def operator_scope(principal: Principal, scope: str | None, what: str) -> str:
    """`scope`, or without one the one scope where the principal is an operator (400 when that is not one)."""
    if scope is None:
        held = principal.scopes_with(Role.OPERATOR)
        if len(held) != 1:
            raise InvalidRequest("scope is required", errors={"scope": [f"Name the scope of the {what}."]})
        scope = held[0]
    return scope


def operator_row(
    principal: Principal, rows: QuerySet[Row], row_id: UUID | str, what: str, *, lock: bool = False
) -> Row:
    """The row `row_id` among `rows` (a selector of the principal's operator scopes), locked if asked.

    403 for a principal that is an operator nowhere; 404 "<what> <id> not
    found" for a row outside `rows`, leaking nothing (not whether it exists
    elsewhere). Endpoints, notification routes and approval floors are
    looked up this one way.
    """
    require_operator(principal)
    query = rows.filter(pk=row_id)
    found = (query.select_for_update() if lock else query).first()
    if found is None:
        raise NotFound(f"{what} {row_id} not found")
    return found


def endpoint_of(principal: Principal, endpoint_id: UUID | str, *, lock: bool = False) -> WebhookEndpoint:
    """An endpoint in the principal's operator scopes (404 otherwise, leaking nothing)."""
    return operator_row(principal, selectors.webhook_endpoints(principal), endpoint_id, "webhook", lock=lock)


def is_current_secret(*, endpoint_id: UUID | str, secret: str | None) -> bool:
    """Whether `secret` is the endpoint's signing secret now: not rotated out (even in its grace day), not gone.

    A replayed create or rotation asks it before showing a secret again; no lock, no scope (the replay is the
    caller's own first answer).
    """
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id).only("secret").first()
    return endpoint is not None and secret is not None and hmac.compare_digest(endpoint.secret, secret)


# -- changes ---------------------------------------------------------------------------------


def create_endpoint(
    *,
    principal: Principal,
    scope: str | None,
    url: str,
    event_types: list[str],
    format: str = WebhookFormat.STANDARD,
    description: str = "",
) -> tuple[WebhookEndpoint, str]:
    """A new active endpoint of `scope`, and its signing secret (returned here only, never shown again).

    Without a scope, the one scope where the principal is an operator.
    Refuses an invalid field (400) and a scope where the principal is not an
    operator (403) before writing. Not idempotent: a retried create makes a
    second endpoint with its own secret.
    """
    require_operator(principal)
    scope = operator_scope(principal, scope, "endpoint")
    types = _check_fields(scope, url, event_types, format, description)
    if not principal.can(Role.OPERATOR, scope):
        raise Forbidden(f"the 'operator' role is required in scope '{scope}'")
    secret = new_secret()
    with transaction.atomic():
        endpoint = WebhookEndpoint(
            url=url,
            event_types=types,
            format=format,
            description=description,
            secret=secret,
            created_by=principal.name,
            created_at=db_now(),
        )
        endpoint.stamp_scope(scope)
        endpoint.save(force_insert=True)
        _logged("created", principal, endpoint)
    return endpoint, secret


def disable_endpoint(*, principal: Principal, endpoint_id: UUID | str) -> WebhookEndpoint:
    """Stop delivering to the endpoint; its messages are kept. Locks the endpoint row.

    Disabling a disabled endpoint changes nothing and answers it as it is.
    """
    with transaction.atomic():
        endpoint = endpoint_of(principal, endpoint_id, lock=True)
        if endpoint.active:
            endpoint.active = False
            endpoint.disabled_reason = f"disabled by {principal.name}"
            endpoint.save(update_fields=["active", "disabled_reason"])
            _logged("disabled", principal, endpoint)
    return endpoint


def enable_endpoint(*, principal: Principal, endpoint_id: UUID | str) -> WebhookEndpoint:
    """Deliver to the endpoint again (after an operator's disable or a receiver's 410). Locks the endpoint row.

    Enabling an active endpoint changes nothing and answers it as it is.
    """
    with transaction.atomic():
        endpoint = endpoint_of(principal, endpoint_id, lock=True)
        if not endpoint.active:
            endpoint.active = True
            endpoint.disabled_reason = ""
            endpoint.save(update_fields=["active", "disabled_reason"])
            _logged("enabled", principal, endpoint)
    return endpoint


def rotate_secret(*, principal: Principal, endpoint_id: UUID | str) -> tuple[WebhookEndpoint, str]:
    """A new signing secret, returned here only; the current one keeps signing beside it for 24 hours.

    Locks the endpoint row. A second rotation within the day drops the oldest
    secret: only the current and the one before it sign.
    """
    secret = new_secret()
    with transaction.atomic():
        endpoint = endpoint_of(principal, endpoint_id, lock=True)
        endpoint.previous_secret = endpoint.secret
        endpoint.previous_secret_expires_at = db_now() + ROTATION_GRACE
        endpoint.secret = secret
        endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at"])
        _logged("rotated", principal, endpoint)
    return endpoint, secret


def send_test(*, principal: Principal, endpoint_id: UUID | str) -> WebhookMessage:
    """A `webhook.test` event for this endpoint only, delivered like any other (signed, retried).

    Writes the outbox row already dispatched (the fan-out must not send it to
    the scope's other endpoints) and the endpoint's message beside it, then
    enqueues its delivery on commit. Refuses a disabled endpoint (409
    invalid_state): nothing would be sent.
    """
    with transaction.atomic():
        endpoint = endpoint_of(principal, endpoint_id)
        if not endpoint.active:
            raise InvalidState(f"webhook {endpoint.id} is disabled; enable it before sending a test")
        now = db_now()
        data = {"endpoint_id": str(endpoint.id), "scope": endpoint.scope, "requested_by": principal.name}
        event = OutboxEvent(type="webhook.test", data=data, created_at=now, dispatched_at=now)
        event.stamp_scope(endpoint.scope)
        event.save(force_insert=True)
        message = WebhookMessage(
            endpoint=endpoint,
            event_id=event.id,
            type=event.type,
            body=presenters.webhook_body(event, endpoint.format),
            next_attempt_at=now,
            created_at=now,
        )
        message.stamp_scope(endpoint.scope)
        message.save(force_insert=True)
        _logged("tested", principal, endpoint)
        outbox.enqueue_delivery([endpoint.id])
    return message


def redeliver(*, principal: Principal, endpoint_id: UUID | str, message_id: UUID | str) -> WebhookMessage:
    """A failed or delivered message is pending again, due now, its attempts kept. Locks the message row.

    The same message id (the `webhook-id`) goes out again, so a receiver that
    already has it can dedupe. Refuses a pending message (409 invalid_state:
    it is already on its way) and a disabled endpoint.
    """
    with transaction.atomic():
        endpoint = endpoint_of(principal, endpoint_id)
        query = selectors.webhook_messages(principal, endpoint.id).filter(pk=message_id).prefetch_related(None)
        message = query.select_for_update().first()
        if message is None:
            raise NotFound(f"message {message_id} not found")
        if not endpoint.active:
            raise InvalidState(f"webhook {endpoint.id} is disabled; enable it before redelivering")
        if message.status == MessageStatus.PENDING:
            raise InvalidState(f"message {message.id} is pending already; it is attempted at its due time")
        message.status = MessageStatus.PENDING
        message.next_attempt_at = db_now()
        message.delivered_at = None
        message.save(update_fields=["status", "next_attempt_at", "delivered_at"])
        _logged("redelivered", principal, endpoint, message_id=str(message.id))
        outbox.enqueue_delivery([endpoint.id])
    return message


def _logged(change: str, principal: Principal, endpoint: WebhookEndpoint, **extra: str) -> None:
    """One INFO line once the change commits; the URL's host only (its path may hold a receiver's token)."""
    fields = {
        "webhook_change": change,
        "endpoint_id": str(endpoint.id),
        "scope": endpoint.scope,
        "host": urlsplit(endpoint.url).hostname or "",
        "actor": principal.name,
        **extra,
    }
    transaction.on_commit(lambda: log.info("webhook %s %s", change, fields["endpoint_id"], extra=fields))
