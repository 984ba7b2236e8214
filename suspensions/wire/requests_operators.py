"""The request bodies of the operators' routes: webhooks (docs/api.md, "7.8 Webhooks"), notification routes
(docs/notifications.md, "Routes"), approval floors (docs/policies.md, "Floors") and more time for a pause
(docs/api.md, "`POST /suspensions/{id}/extend` — more time"), each declared once."""

from typing import Annotated, Self

from pydantic import Field, model_validator

from ..models import (
    OPERATOR_WEBHOOK_FORMATS,
    ROUTE_EVENT_TYPES,
    WEBHOOK_EVENT_TYPES,
    NotificationChannel,
    WebhookFormat,
)
from .base import MAX_TTL, MISSING, AwareTime, Body, Kept, OneOf, Shown, Text, Trimmed, Uuid, refuse

Scope = Annotated[Text, Field(max_length=192)]
SCOPE_HELP = "May be left out by an operator in exactly one scope."
Description = Annotated[Trimmed, Field(max_length=500)]


class CreateWebhook(Body):
    """A new endpoint; `scope` may be left out by a principal that is an operator in exactly one scope."""

    scope: Scope | MISSING = Field(MISSING, description=SCOPE_HELP)
    url: Annotated[Kept, Field(max_length=2000)] = Field(description="http or https, without credentials.")
    event_types: list[Annotated[str, OneOf(WEBHOOK_EVENT_TYPES)]] = Field(
        default_factory=list, description="The event types to receive; empty or absent: every type."
    )
    format: Annotated[str, OneOf(OPERATOR_WEBHOOK_FORMATS)] = Field(
        WebhookFormat.STANDARD.value,
        description="`standard`: signed Standard Webhooks JSON; `slack`: an unsigned Slack incoming-webhook message.",
    )
    description: Description = ""


class CreateNotificationRoute(Body):
    """A new route; `scope` may be left out by a principal that is an operator in exactly one scope."""

    scope: Scope | MISSING = Field(MISSING, description=SCOPE_HELP)
    kind: Annotated[str, OneOf(tuple(NotificationChannel.values))] = Field(
        description="`email`: an address; `slack`: a Slack channel."
    )
    target: Annotated[Kept, Field(max_length=320)] = Field(
        description="An email address for `email`; a Slack channel id (C0123ABC, not its #name) for `slack`."
    )
    event_types: list[Annotated[str, OneOf(ROUTE_EVENT_TYPES)]] = Field(
        default_factory=list, description="The approval events to be told of; empty or absent: all of them."
    )
    description: Description = ""


class UpdateApprovalFloor(Body):
    """The fields to change; each left out stays as it is (services.approval_floors checks them again)."""

    quorum: Annotated[int, Field(ge=1, le=5)] | MISSING = Field(
        MISSING, description="The fewest distinct approvers, 1 to 5."
    )
    exclude_requester: bool | MISSING = Field(MISSING, description="Separation of duties always applies.")
    on_expiry: Annotated[list[Annotated[str, OneOf(("expire", "deny", "escalate"))]], Field(min_length=1)] | MISSING = (
        Field(MISSING, description="The on_expiry values a pause may use, each once.")
    )
    require_linked_person: bool | MISSING = Field(
        MISSING, description="Only a principal of a person (a user, or a token linked to one) may decide."
    )
    require_escalation: bool | MISSING = Field(
        MISSING, description="An approval pause must carry an escalation chain (`approval.escalation`)."
    )


class CreateApprovalFloor(UpdateApprovalFloor):
    """A new floor; defaults: quorum 1, exclude_requester true, every on_expiry, require_linked_person and
    require_escalation false."""

    scope: Scope | MISSING = Field(MISSING, description=SCOPE_HELP)


class ExtendDeadline(Body):
    """More time for a live pause: `seconds` or `until`, and why."""

    seconds: Annotated[int, Field(ge=1, le=MAX_TTL)] | MISSING = Field(
        MISSING,
        description="Added to the current deadline. Exactly one of seconds and until; a retry adds again unless it "
        "sends the same Idempotency-Key.",
    )
    until: AwareTime | MISSING = Field(
        MISSING,
        description="The new deadline, RFC 3339 with its offset, later than the current one. The same until again "
        "answers the pause as it is (200) and writes nothing.",
    )
    reason: Annotated[Shown, Field(max_length=1000)] = Field(
        description="Why the pause gets more time; kept on the `deadline_extended` event."
    )

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.seconds is MISSING) == (self.until is MISSING):
            refuse("Give exactly one of seconds and until.", "seconds")
        return self


class CreateLegalHold(Body):
    """A legal hold (docs/auditors.md, "Retention and legal holds"): on a scope and every scope below it, or on one
    run; exactly one of the two."""

    scope: Scope | MISSING = Field(MISSING, description="Hold every run of this scope and below it.")
    run: Uuid | MISSING = Field(MISSING, description="Hold this one run.")
    reason: Annotated[Text, Field(max_length=500)] = Field(description="Why: a case, a request, an investigation.")


Username = Annotated[Text, Field(max_length=150)]


class CreateDelegation(Body):
    """A delegation (docs/identity.md, "Delegation"): `to` decides for `from` in `scope` from `starts_at` (default
    now) to `ends_at`. `from` left out: the caller's own person."""

    from_: Username | MISSING = Field(
        MISSING,
        alias="from",
        description="Who is away (a username). Left out: yourself; another person needs the operator role there.",
    )
    to: Username = Field(description="Who decides in their place (a username): an active staff user.")
    scope: Scope = Field(description="Where: this scope and every scope under it.")
    starts_at: AwareTime | MISSING = Field(MISSING, description="From when (RFC 3339); left out or past: now.")
    ends_at: AwareTime = Field(description="Until when (RFC 3339): after starts_at, at most 366 days later.")
    reason: Annotated[Trimmed, Field(max_length=500)] = Field("", description="Why, shown to the delegate.")
