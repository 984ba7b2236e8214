"""Typed results, continued: approvals, receipts, flow waits, discovery and webhooks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .models import JSON, PendingCall, Version, at, optional_str, raw_field, when


@dataclass(frozen=True, kw_only=True)
class Approval:
    """One approval, pending or decided (GET /approvals/{id}); `version` is None once decided.

    With an approval policy (docs/policies.md): `policy` `{quorum, exclude_requester,
    on_expiry}`, the `votes` cast so far, and once decided `final_calls` (the
    calls as admitted, edits included) or `response` (a respond's words).
    """

    suspension_id: str
    run_id: str
    scope: str
    agent_id: str
    status: str
    calls: list[PendingCall]
    requested_by: str
    created_at: datetime
    expires_at: datetime | None
    decided_by: str
    note: str
    resolved_at: datetime | None
    admission_id: str | None
    run_state: str | None
    version: Version | None
    policy: JSON | None = None
    votes: list[JSON] | None = None
    final_calls: list[JSON] | None = None
    response: str | None = None
    escalated_at: datetime | None = None
    floor: JSON | None = None
    tags: tuple[str, ...] = ()
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> Approval:
        version = data.get("version")
        votes = data.get("votes")
        return cls(
            suspension_id=data["suspension_id"],
            run_id=data["run_id"],
            scope=data["scope"],
            agent_id=data["agent_id"],
            status=data["status"],
            calls=[PendingCall.from_json(c) for c in data["calls"]],
            requested_by=data["requested_by"],
            created_at=at(data["created_at"]),
            expires_at=when(data.get("expires_at")),
            decided_by=data["decided_by"],
            note=data["note"],
            resolved_at=when(data.get("resolved_at")),
            admission_id=optional_str(data.get("admission_id")),
            run_state=data.get("run_state"),
            version=Version.from_json(version) if version else None,
            policy=data.get("policy"),
            votes=votes if isinstance(votes, list) else None,
            final_calls=data.get("final_calls"),
            response=data.get("response"),
            escalated_at=when(data.get("escalated_at")),
            floor=data.get("floor"),
            tags=tuple(data.get("tags", ())),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class ApprovalLink:
    """A sealed link to a pending approval's console page, for the agent to hand its person (single use)."""

    approval_id: str
    run_id: str
    url: str
    expires_at: datetime
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> ApprovalLink:
        return cls(
            approval_id=data["approval_id"],
            run_id=data["run_id"],
            url=data["url"],
            expires_at=at(data["expires_at"]),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class ExpiryReceipt:
    """Proof that an admitted continuation expired before it was started (T9)."""

    run_id: str
    suspension_id: str
    scope: str
    request_digest: str
    run_revision: int
    expired_at: datetime
    event_id: int | None
    digest: str
    valid: bool
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> ExpiryReceipt:
        return cls(
            run_id=data["run_id"],
            suspension_id=data["suspension_id"],
            scope=data["scope"],
            request_digest=data["request_digest"],
            run_revision=data["run_revision"],
            expired_at=at(data["expired_at"]),
            event_id=data.get("event_id"),
            digest=data["digest"],
            valid=data["valid"],
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class ClosureReceipt:
    """Proof that an operator closed an uncertain start as incomplete (T10)."""

    id: str
    run_id: str
    suspension_id: str
    scope: str
    request: JSON
    request_digest: str
    run_revision: int
    event_id: int | None
    actor: str
    closed_at: datetime
    digest: str
    valid: bool
    fresh: bool
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> ClosureReceipt:
        return cls(
            id=data["id"],
            run_id=data["run_id"],
            suspension_id=data["suspension_id"],
            scope=data["scope"],
            request=data["request"],
            request_digest=data["request_digest"],
            run_revision=data["run_revision"],
            event_id=data.get("event_id"),
            actor=data["actor"],
            closed_at=at(data["closed_at"]),
            digest=data["digest"],
            valid=data["valid"],
            fresh=data["fresh"],
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class ParkedWait:
    """A parked flow wait: embed `correlation_id` in the dispatch; the bus resumes with it."""

    correlation_id: str
    store_key: str
    user_id: str
    scope: str
    run_id: str
    suspension_id: str
    run_revision: int
    reason: str
    expires_at: datetime | None
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> ParkedWait:
        return cls(
            correlation_id=data["correlation_id"],
            store_key=data["store_key"],
            user_id=data["user_id"],
            scope=data["scope"],
            run_id=data["run_id"],
            suspension_id=data["suspension_id"],
            run_revision=data["run_revision"],
            reason=data["reason"],
            expires_at=when(data.get("expires_at")),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class AgentReplyRuns:
    """GET /agent-replies/runs: run ids; pass `next` as `after=` for the next page (None on the last)."""

    runs: list[str]
    next: str | None
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> AgentReplyRuns:
        return cls(runs=list(data["runs"]), next=data.get("next"), raw=data)


@dataclass(frozen=True, kw_only=True)
class WebhookEndpoint:
    """A webhook endpoint; `secret` is set only in the answers to create and rotate-secret."""

    id: str
    scope: str
    url: str
    event_types: list[str]
    format: str
    active: bool
    disabled_reason: str
    description: str
    created_by: str
    created_at: datetime
    previous_secret_expires_at: datetime | None
    secret: str | None = None
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> WebhookEndpoint:
        return cls(
            id=data["id"],
            scope=data["scope"],
            url=data["url"],
            event_types=list(data["event_types"]),
            format=data["format"],
            active=data["active"],
            disabled_reason=data["disabled_reason"],
            description=data["description"],
            created_by=data["created_by"],
            created_at=at(data["created_at"]),
            previous_secret_expires_at=when(data.get("previous_secret_expires_at")),
            secret=data.get("secret"),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class ApprovalFloor:
    """The least an approval pause in `scope`, or below it, asks for (docs/policies.md, "Floors")."""

    id: str
    scope: str
    quorum: int
    exclude_requester: bool
    on_expiry: list[str]
    require_linked_person: bool
    require_escalation: bool
    created_by: str
    created_at: datetime
    updated_by: str
    updated_at: datetime
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> ApprovalFloor:
        return cls(
            id=data["id"],
            scope=data["scope"],
            quorum=data["quorum"],
            exclude_requester=data["exclude_requester"],
            on_expiry=list(data["on_expiry"]),
            require_linked_person=data["require_linked_person"],
            require_escalation=data.get("require_escalation", False),
            created_by=data["created_by"],
            created_at=at(data["created_at"]),
            updated_by=data["updated_by"],
            updated_at=at(data["updated_at"]),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class DeliveryAttempt:
    number: int
    at: datetime
    status_code: int | None
    error: str
    duration_ms: int

    @classmethod
    def from_json(cls, data: JSON) -> DeliveryAttempt:
        return cls(
            number=data["number"],
            at=at(data["at"]),
            status_code=data.get("status_code"),
            error=data["error"],
            duration_ms=data["duration_ms"],
        )


@dataclass(frozen=True, kw_only=True)
class WebhookMessage:
    """One event for one endpoint; `id` is the `webhook-id` header of every attempt."""

    id: str
    endpoint_id: str
    event_id: int
    run_id: str | None
    type: str
    status: str
    attempt_count: int
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None
    body: str
    attempts: list[DeliveryAttempt]
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> WebhookMessage:
        return cls(
            id=data["id"],
            endpoint_id=data["endpoint_id"],
            event_id=data["event_id"],
            run_id=optional_str(data.get("run_id")),
            type=data["type"],
            status=data["status"],
            attempt_count=data["attempt_count"],
            next_attempt_at=when(data.get("next_attempt_at")),
            created_at=at(data["created_at"]),
            delivered_at=when(data.get("delivered_at")),
            body=data["body"],
            attempts=[DeliveryAttempt.from_json(a) for a in data["attempts"]],
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class NotificationRoute:
    """Where a scope's approvals are also announced: an email address or a Slack channel (docs/notifications.md)."""

    id: str
    scope: str
    kind: str
    target: str
    event_types: list[str]
    active: bool
    description: str
    created_by: str
    created_at: datetime
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> NotificationRoute:
        return cls(
            id=data["id"],
            scope=data["scope"],
            kind=data["kind"],
            target=data["target"],
            event_types=list(data["event_types"]),
            active=data["active"],
            description=data["description"],
            created_by=data["created_by"],
            created_at=at(data["created_at"]),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class Delegation:
    """Who decides for whom while someone is away (docs/identity.md, "Delegation"); people by username."""

    id: str
    from_: str
    to: str
    scope: str
    starts_at: datetime
    ends_at: datetime
    reason: str
    active: bool
    created_by: str
    created_at: datetime
    ended_at: datetime | None
    ended_by: str
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> Delegation:
        return cls(
            id=data["id"],
            from_=data["from"],
            to=data["to"],
            scope=data["scope"],
            starts_at=at(data["starts_at"]),
            ends_at=at(data["ends_at"]),
            reason=data.get("reason", ""),
            active=bool(data["active"]),
            created_by=data["created_by"],
            created_at=at(data["created_at"]),
            ended_at=when(data.get("ended_at")),
            ended_by=data.get("ended_by", ""),
            raw=data,
        )
