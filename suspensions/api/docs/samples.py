"""The values the OpenAPI examples share: one story, as in docs/api.md §7.

Request examples are sent as they are, except that ids, digests, the
correlation id and a closure's proof window are the caller's own: each of
those is one constant here, so tests/api/test_openapi.py can put a real
row's value in its place and post every example to the live API.
"""

from typing import Any

# Ids and digests of one run's story (the values docs/api.md shows).
RUN_ID = "01a22e4f-358b-77fc-b5b1-13f2705dc905"
SUSPENSION_ID = "01a22e4f-498d-7217-9bf1-db5125ee1858"
ADMISSION_ID = "01a22e4f-5e9f-71ea-966d-27b48316a991"
WEBHOOK_ID = "01a22e4f-351f-71a9-8405-e222bcbd535d"
MESSAGE_ID = "01a22e4f-fe52-7465-a848-1b61f2b249eb"
FLOOR_ID = "01a22e4f-2c4d-7b1e-9a3f-5e6d7c8b9a01"
DELEGATION_ID = "01a22e4f-2c4d-7b1e-9a3f-5e6d7c8b9a02"
ROUTE_ID = "01a22e4f-3e7a-7c2d-8b4f-6a7b8c9d0e12"
HOLD_ID = "01a22e4f-41c8-7d3e-9c5a-7b8c9d0e1f23"
REQUEST_DIGEST = "cd0632817fe245e8251cff92427ec750e126c8afb4bdaecbf0fef127ab164c42"
SUSPENSION_DIGEST = "8ebee46803a6ae06b950f356fba0a175a7e9b2b1e353ee8a840cef71fbf546b0"
START_DIGEST = "7a1afae4c9a7f0d5a0e3d1b9f6c2e8a4b5d7c3e1f9a2b4c6d8e0f1a3b5c7d9e2"
CALLBACK_TOKEN = "eyJyIjoiMDFhMjJlNGYiLCJzIjoiMDFhMjJlNGYiLCJlIjpudWxsfQ:1vQbF2:kM2j0wqk5s1H9mZP1kxQv2dY8b0"
CORRELATION_ID = "demo:slack:C01:conv-3:U42::pack=billing::flow=refund::n=9ba546dae8a4340baa0a24e733ebaf75"
# A closure's proof window must hold "now": observed_at <= now < expires_at.
OBSERVED_AT = "2026-11-30T21:14:56Z"
PROOF_EXPIRES_AT = "2026-11-30T22:14:56Z"
# The caller's own values, in the order a caller would replace them.
PLACEHOLDERS = (
    RUN_ID,
    SUSPENSION_ID,
    ADMISSION_ID,
    WEBHOOK_ID,
    MESSAGE_ID,
    FLOOR_ID,
    HOLD_ID,
    DELEGATION_ID,
    REQUEST_DIGEST,
    START_DIGEST,
    CORRELATION_ID,
    OBSERVED_AT,
    PROOF_EXPIRES_AT,
)

AT = "2026-11-30T21:14:37.837863Z"
LATER = "2026-11-30T22:14:37.837863Z"
ENGINE = "token:demo:engine"
BUS = "token:demo:bus"
APPROVER = "token:demo:approver"
OPERATOR = "token:demo:operator"


def version(revision: int = 2) -> dict[str, Any]:
    """The claim version: what the caller saw (the suspend answer's `id` and `run_revision`)."""
    return {"run_id": RUN_ID, "suspension_id": SUSPENSION_ID, "run_revision": revision}


TOOL_CALL = {"id": "call_1", "name": "query_warehouse", "arguments": '{"sql": "select 1"}'}
APPROVAL_CALL = {"id": "call_9", "name": "send_refund", "arguments": '{"amount": 900}'}
REPLY_CALL = {"id": "ask_1", "name": "ask_peer", "arguments": '{"question": "stock?"}', "reply_with": "q-7f3a"}

CONTINUATION: dict[str, Any] = {
    "messages": [{"role": "user", "content": "count the orders"}],
    "system_prompt": "You are the VPC agent.",
    "step_index": 1,
    "tokens_used": 42,
    "new_messages_from": 0,
    "session_id": "sess-1",
    "config": {"model": "gpt-4.1", "tools": ["query_warehouse"], "tools_restricted": True},
}
SHORT_CONTINUATION: dict[str, Any] = {
    "messages": [],
    "system_prompt": "",
    "step_index": 0,
    "tokens_used": 0,
    "new_messages_from": 0,
    "session_id": "sess-1",
    "config": {},
}
REFUND_CONTINUATION: dict[str, Any] = {
    "messages": [{"role": "user", "content": "refund order 42"}],
    "system_prompt": "You are the support agent.",
    "step_index": 3,
    "tokens_used": 900,
    "new_messages_from": 0,
    "session_id": "sess-1",
    "config": {"model": "gpt-4.1", "tools": ["send_refund"]},
}

# Bodies other examples build on: a resume needs the external-tool pause, a decision the approval pause...
SUSPEND_TOOL = {
    "revision": 1,
    "reason": "external_tool",
    "ttl_seconds": 3600,
    "pending": [TOOL_CALL],
    "continuation": CONTINUATION,
}
SUSPEND_APPROVAL = {
    "revision": 1,
    "reason": "approval",
    "pending": [APPROVAL_CALL],
    "continuation": REFUND_CONTINUATION,
}
# An approval pause with a policy (docs/policies.md): the amount may be lowered, two people must agree,
# and an unanswered request goes up to the parent scope's approvers once.
EDITABLE_CALL = {
    **APPROVAL_CALL,
    "editable": True,
    "arguments_schema": {
        "type": "object",
        "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 1000}},
        "required": ["amount"],
        "additionalProperties": False,
    },
}
SUSPEND_POLICY = {
    "revision": 1,
    "reason": "approval",
    "ttl_seconds": 3600,
    "pending": [EDITABLE_CALL],
    "continuation": REFUND_CONTINUATION,
    "approval": {"quorum": 2, "exclude_requester": True, "on_expiry": {"escalate": {"extend_seconds": 1800}}},
}
SUSPEND_REPLY = {
    "revision": 1,
    "reason": "agent_reply",
    "ttl_seconds": 0,
    "pending": [REPLY_CALL],
    "continuation": SHORT_CONTINUATION,
}
ENVELOPE = {
    "tenant": "demo",
    "env": "prod",
    "provider": "slack",
    "channel": "C01",
    "conversation": "conv-3",
    "user": "U42",
    "pack": "billing",
    "flow": "refund",
}
PARK_TOOL = {
    "envelope": ENVELOPE,
    "snapshot": {"node": "ask_manager", "vars": {"amount": 900}},
    "reason": "external_tool",
    "ttl_seconds": 3600,
}
PARK_APPROVAL = {
    "envelope": {**ENVELOPE, "conversation": "conv-4"},
    "snapshot": {"node": "approve"},
    "reason": "approval",
    "decision_token": "tok-5b1e9",
}


# -- answers -----------------------------------------------------------------------------------


def run(**fields: Any) -> dict[str, Any]:
    return {
        "id": RUN_ID,
        "scope": "demo",
        "agent_id": "support-agent",
        "session_id": "sess-1",
        "state": "running",
        "revision": 1,
        "error": "",
        "last_reason": "",
        "tags": ["team:support"],
        "created_at": AT,
        "updated_at": AT,
        "suspension_id": None,
        **fields,
    }


def pause(call: dict[str, Any] = TOOL_CALL, **fields: Any) -> dict[str, Any]:
    """A pause as suspend, a first start and GET /suspensions/{id} answer it."""
    return {
        "id": SUSPENSION_ID,
        "run_id": RUN_ID,
        "scope": "demo",
        "reason": "external_tool",
        "pending": [call],
        "continuation": CONTINUATION,
        "expires_at": LATER,
        "created_at": AT,
        "correlation_id": None,
        "engine_version": None,
        "tags": ["team:support"],
        **fields,
    }


def pause_row(**fields: Any) -> dict[str, Any]:
    """A row of GET /suspensions and GET /approvals: the pending calls, no continuation."""
    return {
        "id": SUSPENSION_ID,
        "run_id": RUN_ID,
        "scope": "demo",
        "agent_id": "support-agent",
        "reason": "approval",
        "pending": [APPROVAL_CALL],
        "expires_at": LATER,
        "created_at": AT,
        "run_revision": 2,
        "run_state": "paused",
        "correlation_id": None,
        "tags": ["team:support"],
        **fields,
    }


def admission(source: str = "one_shot", *, fresh: bool = True, **fields: Any) -> dict[str, Any]:
    return {
        "id": ADMISSION_ID,
        "run_id": RUN_ID,
        "suspension_id": SUSPENSION_ID,
        "scope": "demo",
        "source": source,
        "version": version(),
        "request_digest": REQUEST_DIGEST,
        "suspension_digest": SUSPENSION_DIGEST,
        "claimed_revision": 3,
        "admitted_at": AT,
        "actor": ENGINE,
        "valid": True,
        "fresh": fresh,
        **fields,
    }


START = {
    "run_id": RUN_ID,
    "suspension_id": SUSPENSION_ID,
    "run_revision": 3,
    "request_digest": REQUEST_DIGEST,
    "started_at": AT,
    "digest": START_DIGEST,
    "valid": True,
}


def claimed(admitted: dict[str, Any], *, fresh: bool = True, **fields: Any) -> dict[str, Any]:
    """A claim's answer: receipts; only a fresh grant of execution adds the pause and its input."""
    return {
        "run_id": RUN_ID,
        "run_revision": 3,
        "run_state": "running",
        "admission": admitted,
        "fresh": fresh,
        **fields,
    }


def problem(status: int, code: str, title: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": f"https://suspensions.dev/errors/{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        **extra,
    }


def endpoint(**fields: Any) -> dict[str, Any]:
    return {
        "id": WEBHOOK_ID,
        "scope": "demo",
        "url": "https://hooks.example.com/suspensions",
        "event_types": [],
        "format": "standard",
        "active": True,
        "disabled_reason": "",
        "description": "docs receiver",
        "created_by": OPERATOR,
        "created_at": AT,
        "previous_secret_expires_at": None,
        **fields,
    }


def route(**fields: Any) -> dict[str, Any]:
    return {
        "id": ROUTE_ID,
        "scope": "demo",
        "kind": "email",
        "target": "oncall@example.com",
        "event_types": [],
        "active": True,
        "description": "the on-call inbox",
        "created_by": OPERATOR,
        "created_at": AT,
        **fields,
    }


def delegation(**fields: Any) -> dict[str, Any]:
    return {
        "id": DELEGATION_ID,
        "from": "alice",
        "to": "bob",
        "scope": "demo",
        "starts_at": AT,
        "ends_at": "2026-12-07T18:00:00Z",
        "reason": "On leave",
        "active": True,
        "created_by": "user:alice",
        "created_at": AT,
        "ended_at": None,
        "ended_by": "",
        **fields,
    }


def floor(**fields: Any) -> dict[str, Any]:
    return {
        "id": FLOOR_ID,
        "scope": "demo",
        "quorum": 2,
        "exclude_requester": True,
        "on_expiry": ["expire", "deny"],
        "require_linked_person": True,
        "require_escalation": False,
        "created_by": OPERATOR,
        "created_at": AT,
        "updated_by": OPERATOR,
        "updated_at": AT,
        **fields,
    }


def message(**fields: Any) -> dict[str, Any]:
    return {
        "id": MESSAGE_ID,
        "endpoint_id": WEBHOOK_ID,
        "event_id": 26,
        "run_id": None,
        "type": "webhook.test",
        "status": "pending",
        "attempt_count": 0,
        "next_attempt_at": AT,
        "created_at": AT,
        "delivered_at": None,
        "body": '{"data":{"endpoint_id":"' + WEBHOOK_ID + '","requested_by":"' + OPERATOR + '","scope":"demo"},'
        '"timestamp":"' + AT + '","type":"webhook.test"}',
        "attempts": [],
        **fields,
    }
