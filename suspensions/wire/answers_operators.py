"""The operators' answer bodies: approval floors, webhook endpoints and their messages, notification routes; and an
approval's sealed link.

Declared once, as in answers.py (its docstring says how a field keeps its bytes).
"""

from datetime import datetime
from typing import Any, Literal, Self
from uuid import UUID

from pydantic import MISSING, Field

from ..approval_links import Link
from ..models import ApprovalFloor, Delegation, LegalHold, NotificationRoute, WebhookEndpoint, WebhookMessage
from .answers import Answer, Moment, absent, doc

# -- an approval's sealed link (docs/api.md, "`POST /approvals/{id}/link`") -----------------------


class ApprovalLinkOut(Answer):
    """A link to one pending approval's console page, for the agent to hand its person."""

    approval_id: UUID
    run_id: UUID
    url: str = doc("The console page, sealed and single use: a signed-in approver of the scope decides there.")
    expires_at: Moment = doc("The link stops working then (the approval's deadline, at most 24 hours ahead).")

    @classmethod
    def of(cls, link: Link, url: str) -> Self:
        return cls(approval_id=link.approval_id, run_id=link.run_id, url=url, expires_at=link.expires_at)


# -- approval floors (docs/policies.md, "Floors") ------------------------------------------------


class ApprovalFloorOut(Answer):
    """The least an approval pause in `scope`, or below it, must ask for."""

    id: UUID
    scope: str
    quorum: int = doc("The fewest distinct approvers, 1 to 5.")
    exclude_requester: bool = doc("Separation of duties always applies.")
    on_expiry: list[Literal["expire", "deny", "escalate"]] = doc("The on_expiry values a pause may use.")
    require_linked_person: bool = doc("Only a principal of a person (a user, or a token linked to one) may decide.")
    require_escalation: bool = doc("An approval pause must carry an escalation chain.")
    created_by: str
    created_at: Moment
    updated_by: str
    updated_at: Moment

    @classmethod
    def of(cls, floor: ApprovalFloor) -> Self:
        return cls(
            id=floor.id,
            scope=floor.scope,
            quorum=floor.quorum,
            exclude_requester=floor.exclude_requester,
            on_expiry=list(floor.on_expiry),
            require_linked_person=floor.require_linked_person,
            require_escalation=floor.require_escalation,
            created_by=floor.created_by,
            created_at=floor.created_at,
            updated_by=floor.updated_by,
            updated_at=floor.updated_at,
        )


# -- webhooks (docs/api.md, "7.8 Webhooks") -------------------------------------------------------


class WebhookEndpointOut(Answer):
    """A webhook endpoint; its secrets are never shown after the answer that created them."""

    id: UUID
    scope: str
    url: str
    event_types: list[str] = doc("Empty: every type.")
    format: Literal["standard", "slack"]
    active: bool
    disabled_reason: str = doc("Who or what disabled it (an operator, a 410 Gone).")
    description: str
    created_by: str
    created_at: Moment
    previous_secret_expires_at: Moment | None = doc("Until then the secret before the last rotation signs too.")

    @classmethod
    def of(cls, endpoint: WebhookEndpoint) -> Self:
        return cls(**_endpoint_fields(endpoint))


def _endpoint_fields(endpoint: WebhookEndpoint) -> dict[str, object]:
    return {
        "id": endpoint.id,
        "scope": endpoint.scope,
        "url": endpoint.url,
        "event_types": list(endpoint.event_types),
        "format": endpoint.format,
        "active": endpoint.active,
        "disabled_reason": endpoint.disabled_reason,
        "description": endpoint.description,
        "created_by": endpoint.created_by,
        "created_at": endpoint.created_at,
        "previous_secret_expires_at": endpoint.previous_secret_expires_at,
    }


class WebhookEndpointSecretOut(WebhookEndpointOut):
    """The answer to a create or a rotation: the one time the signing secret is shown."""

    secret: str | None = doc(
        "The signing secret `whsec_<base64>`: shown in this answer only. Null only in a replay (same "
        "Idempotency-Key) after the secret was rotated out; `secret_withheld` then says so."
    )
    secret_withheld: str | MISSING = absent("Only in a replay whose secret no longer signs: why `secret` is null.")

    @classmethod
    def of_new(cls, endpoint: WebhookEndpoint, secret: str) -> Self:
        return cls(**_endpoint_fields(endpoint), secret=secret)


class DeliveryAttemptOut(Answer):
    number: int
    at: Moment
    status_code: int | None = doc("The receiver's status; null when none came.")
    error: str = doc("Why the attempt failed without a status (timeout, refused address).")
    duration_ms: int


class WebhookMessageOut(Answer):
    """One event for one endpoint; `id` is the `webhook-id` header on every attempt."""

    id: UUID
    endpoint_id: UUID
    event_id: int
    run_id: UUID | None
    type: str
    status: Literal["pending", "delivered", "failed"]
    attempt_count: int
    next_attempt_at: Moment
    created_at: Moment
    delivered_at: Moment | None
    body: str = doc("The exact body sent on every attempt.")
    attempts: list[DeliveryAttemptOut]

    @classmethod
    def of(cls, message: WebhookMessage) -> Self:
        """One delivery with its attempts, oldest attempt first (prefetched by selectors.webhook_messages)."""
        attempts = [
            DeliveryAttemptOut(
                number=a.number, at=a.at, status_code=a.status_code, error=a.error, duration_ms=a.duration_ms
            )
            for a in message.attempt_rows.all()
        ]
        return cls(
            id=message.id,
            endpoint_id=message.endpoint_id,
            event_id=message.event_id,
            run_id=message.run_id or None,
            type=message.type,
            status=message.status,
            attempt_count=message.attempts,
            next_attempt_at=message.next_attempt_at,
            created_at=message.created_at,
            delivered_at=message.delivered_at,
            body=message.body,
            attempts=attempts,
        )


# -- notification routes (docs/notifications.md, "Routes") ----------------------------------------


class NotificationRouteOut(Answer):
    """Where a scope's approval events are also told: an email address or a Slack channel."""

    id: UUID
    scope: str
    kind: Literal["email", "slack"]
    target: str = doc("An email address, or a Slack channel id.")
    event_types: list[str] = doc("Empty: every approval event.")
    active: bool
    description: str
    created_by: str
    created_at: Moment

    @classmethod
    def of(cls, route: NotificationRoute) -> Self:
        return cls(
            id=route.id,
            scope=route.scope,
            kind=route.kind,
            target=route.target,
            event_types=list(route.event_types),
            active=route.active,
            description=route.description,
            created_by=route.created_by,
            created_at=route.created_at,
        )


# -- legal holds (docs/auditors.md, "Retention and legal holds") --------------------------------------


class LegalHoldOut(Answer):
    """A hold that keeps events past the retention: on `scope` and below it (`run` null), or on `run` (of `scope`)."""

    id: UUID
    scope: str = doc("The held scope; for a hold on a run, the run's scope.")
    run: UUID | None = doc("The held run; null for a hold on a scope.")
    reason: str
    created_by: str
    created_at: Moment
    active: bool = doc("False once released.")
    released_by: str | None
    released_at: Moment | None

    @classmethod
    def of(cls, hold: LegalHold) -> Self:
        return cls(
            id=hold.id,
            scope=hold.scope,
            run=hold.run_id,
            reason=hold.reason,
            created_by=hold.created_by,
            created_at=hold.created_at,
            active=hold.released_at is None,
            released_by=hold.released_by or None,
            released_at=hold.released_at,
        )


# -- delegations (docs/identity.md, "Delegation") -------------------------------------------------


class DelegationOut(Answer):
    """Who decides for whom, where and when; `active` says whether it holds at the time of the answer."""

    id: UUID
    from_: str = Field(alias="from", serialization_alias="from", description="Who is away (a username).")
    to: str = doc("Who decides in their place (a username).")
    scope: str
    starts_at: Moment
    ends_at: Moment
    reason: str
    active: bool = doc("It holds now: started, not past ends_at, not ended.")
    created_by: str
    created_at: Moment
    ended_at: Moment | None = doc("When it was ended before ends_at; null otherwise.")
    ended_by: str = doc("Who ended it early; empty otherwise.")

    @classmethod
    def of(cls, row: Delegation, now: datetime) -> Self:
        return cls.model_validate(
            {
                "id": row.id,
                "from": row.from_user.get_username(),
                "to": row.to_user.get_username(),
                "scope": row.scope,
                "starts_at": row.starts_at,
                "ends_at": row.ends_at,
                "reason": row.reason,
                "active": row.ended_at is None and row.starts_at <= now < row.ends_at,
                "created_by": row.created_by,
                "created_at": row.created_at,
                "ended_at": row.ended_at,
                "ended_by": row.ended_by,
            }
        )

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)
