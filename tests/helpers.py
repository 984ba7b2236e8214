"""Builders for request bodies and API calls, shared by the tests."""

import json
from typing import Any

from rest_framework.test import APIClient

from suspensions.models import (
    Admission,
    Approval,
    ApprovalVote,
    Delegation,
    EarlyResult,
    Event,
    FlowWait,
    IdempotencyKey,
    Notification,
    NotificationRoute,
    OutboxEvent,
    Run,
    Start,
    Suspension,
    WebhookEndpoint,
    WebhookMessage,
)


def continuation(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": "history"},
            {"role": "user", "content": "please refund"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        ],
        "system_prompt": "You are careful.",
        "step_index": 2,
        "tokens_used": 120,
        "new_messages_from": 1,
        "session_id": "sess-1",
        "config": {"model": "m-1", "temperature": None, "max_steps": 10, "tools": ["refund"]},
    }
    body.update(overrides)
    return body


def call(call_id: str = "c1", name: str = "refund", arguments: str = '{"amount": 900}', **extra: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments, **extra}


def envelope(**overrides: Any) -> dict[str, Any]:
    """The inbound envelope of a flow step that parks a correlation-keyed wait
    (docs/api.md, "7.7 Flow waits (correlation-keyed)")."""
    body: dict[str, Any] = {
        "tenant": "acme",
        "env": "prod",
        "provider": "slack",
        "channel": "C1",
        "conversation": "conv-9",
        "user": "U7",
        "pack": "support",
        "flow": "refund",
    }
    body.update(overrides)
    return body


def client(secret: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return c


def post(c: APIClient, url: str, body: Any) -> Any:
    return c.post(url, data=json.dumps(body), content_type="application/json")


def register(c: APIClient, scope: str | None = None, agent_id: str = "agent-1") -> dict[str, Any]:
    body: dict[str, Any] = {"agent_id": agent_id}
    if scope:
        body["scope"] = scope
    response = post(c, "/api/v1/runs", body)
    assert response.status_code == 201, response.content
    return response.json()


def pause(
    c: APIClient,
    *,
    scope: str | None = None,
    reason: str = "external_tool",
    pending: list[dict[str, Any]] | None = None,
    ttl_seconds: int | None = None,
    cont: dict[str, Any] | None = None,
    agent_id: str = "agent-1",
) -> dict[str, Any]:
    """Register a run and pause it; returns the suspension body (with run_revision)."""
    run = register(c, scope, agent_id)
    body: dict[str, Any] = {
        "revision": run["revision"],
        "reason": reason,
        "pending": pending or [call(**({"reply_with": "q-1"} if reason == "agent_reply" else {}))],
        "continuation": cont or continuation(),
    }
    if ttl_seconds is not None:
        body["ttl_seconds"] = ttl_seconds
    response = post(c, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def version(s: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"]}


def resume(c: APIClient, s: dict[str, Any], results: list[dict[str, Any]] | None = None) -> Any:
    """POST the one-shot resume (T3) of pause `s`; by default one result for its call c1."""
    body = {"version": version(s), "results": results or [{"call_id": "c1", "content": "done"}]}
    return post(c, f"/api/v1/runs/{s['run_id']}/resume", body)


def snapshot() -> dict[str, Any]:
    """Everything a refusal must leave untouched."""
    return {
        "runs": sorted(Run.objects.values_list("id", "state", "revision")),
        "suspensions": sorted(Suspension.objects.values_list("id", "expires_at", "deadline")),
        "admissions": Admission.objects.count(),
        "starts": Start.objects.count(),
        "events": Event.objects.count(),
        "approvals": sorted(Approval.objects.values_list("suspension_id", "status", "expires_at")),
        "votes": ApprovalVote.objects.count(),
        "flow_waits": sorted(FlowWait.objects.values_list("id", "live")),
        "webhooks": sorted(
            WebhookEndpoint.objects.values_list("id", "active", "secret", "previous_secret", "url", "event_types")
        ),
        "messages": sorted(WebhookMessage.objects.values_list("id", "status", "next_attempt_at")),
        "outbox": OutboxEvent.objects.count(),
        "notifications": sorted(Notification.objects.values_list("id", "status", "attempts")),
        "routes": sorted(NotificationRoute.objects.values_list("id", "active", "target", "event_types")),
        "early_results": sorted(EarlyResult.objects.values_list("id", "suspension_id", "digest", "expires_at")),
        "runs_with_early_results": Run.objects.filter(has_early_results=True).count(),
        "idempotency_keys": sorted(IdempotencyKey.objects.values_list("principal", "key", "request_digest")),
        "delegations": sorted(Delegation.objects.values_list("id", "ends_at", "ended_at")),
    }


def notify_all() -> None:
    """What the workers do, in this process: fan out every undispatched outbox row, deliver every due notification."""
    from suspensions.services import notifications, outbox

    outbox.fan_out()
    while notifications.deliver():
        pass


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """Assert an RFC 9457 problem with `status` and `code`; returns its body."""
    assert response.status_code == status, response.content[:2000]
    assert response["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert {"type", "title", "status", "detail", "code"} <= body.keys()
    assert (body["status"], body["code"]) == (status, code)
    return body


def refused(send: Any, status: int, code: str) -> dict[str, Any]:
    """Call `send()`, assert the problem it answers and that nothing was written."""
    before = snapshot()
    body = problem(send(), status, code)
    assert snapshot() == before
    return body


def member(username: str, grants: dict[str, list[str]] | None = None, **flags: Any) -> Any:
    """A console user (password "pw") holding `grants` as memberships: {scope: [roles]}."""
    from django.contrib.auth import get_user_model

    from suspensions.models import Membership

    user = get_user_model().objects.create_user(username=username, password="pw", **flags)
    for scope, roles in (grants or {}).items():
        for role in roles:
            m = Membership(user=user, role=role)
            m.stamp_scope(scope)
            m.save()
    return user


def approval_pause(
    scope: str = "acme/support",
    by: Any = None,
    ttl: int = 3600,
    *,
    agent: str = "refund-agent",
    calls: list[dict[str, Any]] | None = None,
    **policy: Any,
) -> Any:
    """An approval pause (of send_refund, unless `calls`) stored through the services by an engine, as an engine
    stores it: the engine is the requester (linked to the user `by`, if given).

    `policy` is the pause's approval policy (quorum, exclude_requester, ...); returns its Approval record.
    """
    from suspensions import services
    from suspensions.principals import Principal

    user_id = by.pk if by is not None else None
    engine = Principal(name="token:engine", grants=((scope, frozenset({"engine"})),), user_id=user_id)
    run = services.register_run(principal=engine, agent_id=agent, scope=scope)
    suspension = services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=run.revision,
        reason="approval",
        pending=calls or [call("c1", "send_refund", '{"amount": 900}')],
        continuation=continuation(),
        ttl_seconds=ttl,
        approval=policy or None,
    )
    return Approval.objects.get(pk=suspension.id)


def chain_from_api(run_id: Any) -> list[dict[str, Any]]:
    """Every event of a run as `GET /api/v1/runs/{id}/events` answers it (all pages), read by a fresh auditor token."""
    from suspensions.models import Run
    from suspensions.tokens import create_token

    run = Run.objects.get(pk=run_id)
    _, secret = create_token(scope=run.scope, roles=["auditor"], name="chain-reader")
    reader, url, events = client(secret), f"/api/v1/runs/{run_id}/events", []
    while url:
        page = reader.get(url)
        assert page.status_code == 200, page.content
        events += page.json()["results"]
        url = page.json()["next"]
    return events


def assert_chains_intact() -> int:
    """Recompute, in Python (suspensions/audit.py), the chain of every run from the events API; returns how many."""
    from suspensions import audit
    from suspensions.models import Event

    runs = list(Event.objects.values_list("run_id", flat=True).distinct())
    for run_id in runs:
        events = chain_from_api(run_id)
        found = audit.walk(events)
        assert found.problem is None, (run_id, found.problem)
        assert events[0]["prev_hash"] == audit.GENESIS
    return len(runs)


def grant_channel(channel: str, scope: str) -> Any:
    """Grant Slack channel `channel` to `scope`, as a superuser does in the admin (docs/notifications.md)."""
    from suspensions.models import SlackChannel

    return SlackChannel.objects.create(channel_id=channel, scope=scope, note="test")
