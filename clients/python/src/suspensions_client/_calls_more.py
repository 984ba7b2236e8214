"""The other endpoints, each as one `Call`: approvals read, receipts, closures, flow waits, discovery, webhooks,
approval floors.

docs/api.md §7.3-§7.9, §7.13 and §7.14. Writes that a resend could do twice (park a flow wait,
create a webhook, rotate its secret, send a test, redeliver, create a floor)
carry an `Idempotency-Key` (`keyed`), so a resend after a lost answer gets the
first answer back. Deleting a floor is not resent: `ConnectionLost(maybe_applied=True)`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ._calls import VersionRef, compact, of, page_of, query, version_of
from ._transport import Call, keyed, segment
from .claims import Claimed
from .models import Page, Suspension
from .records import (
    AgentReplyRuns,
    Approval,
    ApprovalFloor,
    ApprovalLink,
    ClosureReceipt,
    Delegation,
    ExpiryReceipt,
    NotificationRoute,
    ParkedWait,
    WebhookEndpoint,
    WebhookMessage,
)


def get_approval(suspension_id: str) -> Call[Approval]:
    """One approval, pending or decided, with what was asked (approver or auditor)."""
    return Call("GET", f"/approvals/{segment(suspension_id)}", of(Approval.from_json))


def link_approval(suspension_id: str) -> Call[ApprovalLink]:
    """A sealed, single-use link to a pending approval's console page, to hand a person (engine). Writes nothing."""
    return Call("POST", f"/approvals/{segment(suspension_id)}/link", of(ApprovalLink.from_json))


def extend_suspension(
    suspension_id: str,
    *,
    reason: str,
    seconds: int | None = None,
    until: datetime | str | None = None,
    idempotency_key: str | None = None,
) -> Call[Suspension]:
    """More time for a live pause (operator): its deadline `seconds` later, or at `until`; exactly one, and why.

    Sent with an `Idempotency-Key`, so a resend after a lost answer does not extend twice.
    """
    moment = until.isoformat() if isinstance(until, datetime) else until
    body = compact(seconds=seconds, until=moment, reason=reason)
    path = f"/suspensions/{segment(suspension_id)}/extend"
    return keyed("POST", path, of(Suspension.from_json), body, idempotency_key=idempotency_key)


# -- receipts and closures ------------------------------------------------------------------


def get_expiry(run_id: str, suspension_id: str) -> Call[ExpiryReceipt]:
    """The expiry receipt of an admitted continuation the sweep expired before its start."""
    return Call("GET", f"/runs/{segment(run_id)}/expiries/{segment(suspension_id)}", of(ExpiryReceipt.from_json))


def close_run(
    run_id: str,
    *,
    version: VersionRef,
    admission_digest: str,
    start_digest: str,
    run_revision: int,
    issuer: str,
    issuer_revision: str,
    proof_ref: str,
    proof_digest: str,
    observed_at: datetime | str,
    expires_at: datetime | str,
    schema_version: int = 1,
) -> Call[ClosureReceipt]:
    """T10 (operator): close an uncertain start as `incomplete` with a proof; the identical request replays."""
    body = {
        "schema_version": schema_version,
        "version": version_of(version).as_json(),
        "admission_digest": admission_digest,
        "start_digest": start_digest,
        "run_revision": run_revision,
        "issuer": issuer,
        "issuer_revision": issuer_revision,
        "proof_ref": proof_ref,
        "proof_digest": proof_digest,
        "observed_at": observed_at.isoformat() if isinstance(observed_at, datetime) else observed_at,
        "expires_at": expires_at.isoformat() if isinstance(expires_at, datetime) else expires_at,
    }
    return Call("POST", f"/runs/{segment(run_id)}/closures", of(ClosureReceipt.from_json), body)


def get_closure(run_id: str, suspension_id: str) -> Call[ClosureReceipt]:
    """The closure receipt of a closed run's pause (`fresh` false)."""
    return Call("GET", f"/runs/{segment(run_id)}/closures/{segment(suspension_id)}", of(ClosureReceipt.from_json))


# -- correlation-keyed waits and discovery --------------------------------------------------


def park_flow_wait(
    envelope: Mapping[str, Any],
    snapshot: Mapping[str, Any],
    reason: str,
    *,
    ttl_seconds: int | None = None,
    decision_token: str | None = None,
    tags: Sequence[str] | None = None,
    idempotency_key: str | None = None,
) -> Call[ParkedWait]:
    """Park a correlation-keyed wait; embed the answer's `correlation_id` in the dispatch.

    Every park mints a new nonce; sent with an `Idempotency-Key`, a resend
    after a lost answer gets the first park's correlation id back.
    """
    body = compact(
        envelope=dict(envelope),
        snapshot=dict(snapshot),
        reason=reason,
        ttl_seconds=ttl_seconds,
        decision_token=decision_token,
        tags=list(tags) if tags else None,
    )
    return keyed("POST", "/flow-waits", of(ParkedWait.from_json), body, idempotency_key=idempotency_key)


def dispatch_resume(
    tenant: str, env: str, correlation_id: str, output: Any, *, decision_token: str | None = None
) -> Call[Claimed]:
    """The bus resumes a flow wait by correlation id; `output` is any JSON (null included)."""
    body = {"tenant": tenant, "env": env, "correlation_id": correlation_id, "output": output}
    if decision_token is not None:
        body["decision_token"] = decision_token
    return Call("POST", "/dispatch/resume", of(Claimed.from_json), body)


def agent_reply_runs(*, after: str | None = None, limit: int | None = None) -> Call[AgentReplyRuns]:
    """The bus's discovery: runs of its exact scopes holding an agent-reply pause (or its consumed admission)."""
    return Call("GET", "/agent-replies/runs", of(AgentReplyRuns.from_json), params=query(after=after, limit=limit))


# -- webhooks (operator) --------------------------------------------------------------------


def create_webhook(
    url: str,
    *,
    scope: str | None = None,
    event_types: Sequence[str] | None = None,
    format: str | None = None,  # noqa: A002 - the wire name
    description: str | None = None,
    idempotency_key: str | None = None,
) -> Call[WebhookEndpoint]:
    """A new endpoint; the answer's `secret` (`whsec_...`) is shown this once.

    A resend after a lost answer carries the same `Idempotency-Key` and gets the first answer back.
    """
    body = compact(
        url=url,
        scope=scope,
        event_types=list(event_types) if event_types is not None else None,
        format=format,
        description=description,
    )
    return keyed("POST", "/webhooks", of(WebhookEndpoint.from_json), body, idempotency_key=idempotency_key)


def list_webhooks(*, cursor: str | None = None, page_size: int | None = None) -> Call[Page[WebhookEndpoint]]:
    """The endpoints of the caller's operator scopes, newest first (never their secrets)."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", "/webhooks", page_of(WebhookEndpoint.from_json), params=params)


def get_webhook(endpoint_id: str) -> Call[WebhookEndpoint]:
    """One endpoint (never its secret)."""
    return Call("GET", f"/webhooks/{segment(endpoint_id)}", of(WebhookEndpoint.from_json))


def disable_webhook(endpoint_id: str, *, idempotency_key: str | None = None) -> Call[WebhookEndpoint]:
    """Stop delivering (messages are kept); disabling a disabled endpoint changes nothing."""
    path = f"/webhooks/{segment(endpoint_id)}/disable"
    return keyed("POST", path, of(WebhookEndpoint.from_json), idempotency_key=idempotency_key)


def enable_webhook(endpoint_id: str, *, idempotency_key: str | None = None) -> Call[WebhookEndpoint]:
    """Deliver again (after a disable or a receiver's 410); enabling an active endpoint changes nothing."""
    path = f"/webhooks/{segment(endpoint_id)}/enable"
    return keyed("POST", path, of(WebhookEndpoint.from_json), idempotency_key=idempotency_key)


def rotate_webhook_secret(endpoint_id: str, *, idempotency_key: str | None = None) -> Call[WebhookEndpoint]:
    """A new secret (in the answer only); the previous one keeps signing beside it for 24 hours.

    A resend after a lost answer carries the same `Idempotency-Key` and gets the first answer back.
    """
    path = f"/webhooks/{segment(endpoint_id)}/rotate-secret"
    return keyed("POST", path, of(WebhookEndpoint.from_json), idempotency_key=idempotency_key)


def test_webhook(endpoint_id: str, *, idempotency_key: str | None = None) -> Call[WebhookMessage]:
    """Queue a signed `webhook.test` event for this endpoint (202); a resend queues no second one."""
    path = f"/webhooks/{segment(endpoint_id)}/test"
    return keyed("POST", path, of(WebhookMessage.from_json), idempotency_key=idempotency_key)


def webhook_messages(
    endpoint_id: str, *, cursor: str | None = None, page_size: int | None = None
) -> Call[Page[WebhookMessage]]:
    """The endpoint's messages, newest first, each with its delivery attempts."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", f"/webhooks/{segment(endpoint_id)}/messages", page_of(WebhookMessage.from_json), params=params)


def redeliver(endpoint_id: str, message_id: str, *, idempotency_key: str | None = None) -> Call[WebhookMessage]:
    """Make a delivered or failed message pending again, due now (202); a resend redelivers it once."""
    path = f"/webhooks/{segment(endpoint_id)}/messages/{segment(message_id)}/redeliver"
    return keyed("POST", path, of(WebhookMessage.from_json), idempotency_key=idempotency_key)


# -- approval floors (operator) -------------------------------------------------------------


def create_approval_floor(
    *,
    scope: str | None = None,
    quorum: int | None = None,
    exclude_requester: bool | None = None,
    on_expiry: Sequence[str] | None = None,
    require_linked_person: bool | None = None,
    require_escalation: bool | None = None,
    idempotency_key: str | None = None,
) -> Call[ApprovalFloor]:
    """A new approval floor on `scope` (one per scope); fields left out take their defaults.

    A resend after a lost answer carries the same `Idempotency-Key` and gets the first answer back.
    """
    body = compact(
        scope=scope,
        quorum=quorum,
        exclude_requester=exclude_requester,
        on_expiry=list(on_expiry) if on_expiry is not None else None,
        require_linked_person=require_linked_person,
        require_escalation=require_escalation,
    )
    return keyed("POST", "/approval-floors", of(ApprovalFloor.from_json), body, idempotency_key=idempotency_key)


def list_approval_floors(*, cursor: str | None = None, page_size: int | None = None) -> Call[Page[ApprovalFloor]]:
    """The floors of the caller's operator scopes, newest first."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", "/approval-floors", page_of(ApprovalFloor.from_json), params=params)


def get_approval_floor(floor_id: str) -> Call[ApprovalFloor]:
    """One approval floor."""
    return Call("GET", f"/approval-floors/{segment(floor_id)}", of(ApprovalFloor.from_json))


def update_approval_floor(
    floor_id: str,
    *,
    quorum: int | None = None,
    exclude_requester: bool | None = None,
    on_expiry: Sequence[str] | None = None,
    require_linked_person: bool | None = None,
    require_escalation: bool | None = None,
) -> Call[ApprovalFloor]:
    """Change the fields given (the scope stays); the same change again changes nothing."""
    body = compact(
        quorum=quorum,
        exclude_requester=exclude_requester,
        on_expiry=list(on_expiry) if on_expiry is not None else None,
        require_linked_person=require_linked_person,
        require_escalation=require_escalation,
    )
    return Call("PATCH", f"/approval-floors/{segment(floor_id)}", of(ApprovalFloor.from_json), body)


def delete_approval_floor(floor_id: str) -> Call[ApprovalFloor]:
    """Delete a floor; answers it as it was. Not resent after a lost answer (a resend would be a 404)."""
    return Call("DELETE", f"/approval-floors/{segment(floor_id)}", of(ApprovalFloor.from_json), resend=False)


# -- the audit trail (auditor) ----------------------------------------------------------------


def audit_public_key() -> Call[str]:
    """The Ed25519 public key (base64) that verifies every audit checkpoint: keep it from a trusted moment."""
    return Call("GET", "/audit/public-key", lambda data, status: str(data["public_key"]))


def audit_export(*, scope: str | None = None, since: datetime | str | None = None) -> Call[str]:
    """The audit trail as JSON Lines text, held whole (`suspensions_client.verify.verify` checks it offline).

    A very large export is better streamed to a file (curl, or httpx's `stream`).
    """
    return Call("GET", "/audit/export", _json_lines, params=query(scope=scope, since=since))


def _json_lines(data: Any, status: int) -> str:
    # An export of one line parses as one JSON document; more lines arrive as text.
    return data if isinstance(data, str) else json.dumps(data) + "\n"


# -- notification routes (operator) ---------------------------------------------------------


def create_notification_route(
    *,
    kind: str,
    target: str,
    scope: str | None = None,
    event_types: Sequence[str] | None = None,
    description: str | None = None,
    idempotency_key: str | None = None,
) -> Call[NotificationRoute]:
    """A new route: `kind` "email" (`target` an address) or "slack" (`target` a channel id like C0123ABC).

    A resend after a lost answer carries the same `Idempotency-Key` and gets the first answer back.
    """
    types = list(event_types) if event_types is not None else None
    body = compact(kind=kind, target=target, scope=scope, event_types=types, description=description)
    path = "/notification-routes"
    return keyed("POST", path, of(NotificationRoute.from_json), body, idempotency_key=idempotency_key)


def list_notification_routes(
    *, cursor: str | None = None, page_size: int | None = None
) -> Call[Page[NotificationRoute]]:
    """The routes of the caller's operator scopes, newest first."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", "/notification-routes", page_of(NotificationRoute.from_json), params=params)


def get_notification_route(route_id: str) -> Call[NotificationRoute]:
    """One notification route."""
    return Call("GET", f"/notification-routes/{segment(route_id)}", of(NotificationRoute.from_json))


def delete_notification_route(route_id: str) -> Call[NotificationRoute]:
    """Remove a route; answers it as it was. Not resent after a lost answer (a resend would be a 404)."""
    return Call("DELETE", f"/notification-routes/{segment(route_id)}", of(NotificationRoute.from_json), resend=False)


def disable_notification_route(route_id: str, *, idempotency_key: str | None = None) -> Call[NotificationRoute]:
    """Stop a route (its approvals are no longer sent there)."""
    path = f"/notification-routes/{segment(route_id)}/disable"
    return keyed("POST", path, of(NotificationRoute.from_json), idempotency_key=idempotency_key)


def enable_notification_route(route_id: str, *, idempotency_key: str | None = None) -> Call[NotificationRoute]:
    """Start a disabled route again."""
    path = f"/notification-routes/{segment(route_id)}/enable"
    return keyed("POST", path, of(NotificationRoute.from_json), idempotency_key=idempotency_key)


# -- delegations (docs/identity.md, "Delegation") -----------------------------------------------


def create_delegation(
    *,
    to: str,
    scope: str,
    ends_at: str,
    from_: str | None = None,
    starts_at: str | None = None,
    reason: str | None = None,
) -> Call[Delegation]:
    """`to` decides for `from_` (left out: yourself) in `scope` until `ends_at` (RFC 3339), from `starts_at` or now."""
    body = compact(to=to, scope=scope, ends_at=ends_at, starts_at=starts_at, reason=reason)
    if from_ is not None:
        body["from"] = from_
    return Call("POST", "/delegations", of(Delegation.from_json), body)


def list_delegations(*, cursor: str | None = None, page_size: int | None = None) -> Call[Page[Delegation]]:
    """The delegations you gave or hold, and those of your operator scopes, newest first."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", "/delegations", page_of(Delegation.from_json), params=params)


def get_delegation(delegation_id: str) -> Call[Delegation]:
    """One delegation."""
    return Call("GET", f"/delegations/{segment(delegation_id)}", of(Delegation.from_json))


def end_delegation(delegation_id: str) -> Call[Delegation]:
    """End a delegation now; one already ended is answered as it is."""
    return Call("POST", f"/delegations/{segment(delegation_id)}/end", of(Delegation.from_json))
