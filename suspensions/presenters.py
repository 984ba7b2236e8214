"""One renderer per wire shape (STYLE rule 15): receipts, pauses, claims, approvals.

The API returns these dicts, the console reads them, and the OpenAPI schema
documents them with the output serializers in api/shapes.py, which
tests/api/test_shapes.py holds to the same keys. Services return model
instances and small dataclasses; nothing here touches the database.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

from . import digests
from .models import (
    Admission,
    Approval,
    ApprovalFloor,
    ApprovalStatus,
    ApprovalVote,
    AuditCheckpoint,
    ClosureReceipt,
    EventType,
    ExpiryReceipt,
    NotificationRoute,
    OutboxEvent,
    Run,
    RunState,
    Start,
    Suspension,
    WebhookEndpoint,
    WebhookFormat,
    WebhookMessage,
)


def admission_receipt(admission: Admission, *, fresh: bool) -> dict[str, Any]:
    """The immutable proof of a claim: no mutable state in it, so a replay answers it unchanged."""
    version = digests.version_dict(admission.run_id, admission.suspension_id, admission.version_revision)
    return {
        "id": str(admission.id),
        "run_id": str(admission.run_id),
        "suspension_id": str(admission.suspension_id),
        "scope": admission.scope,
        "source": admission.source,
        "version": version,
        "request_digest": admission.request_digest,
        "suspension_digest": admission.suspension_digest,
        "claimed_revision": admission.claimed_revision,
        "admitted_at": digests.rfc3339(admission.admitted_at),
        "actor": admission.actor,
        # Integrity: the digest recomputed from the retained request.
        "valid": digests.request_digest(scope=admission.scope, version=version, input=admission.input)
        == admission.request_digest,
        "fresh": fresh,
    }


def admission_row(admission: Admission) -> dict[str, Any]:
    """The receipt plus where the admission is now (the receipt itself never changes)."""
    return {**admission_receipt(admission, fresh=False), "state": admission.state}


def start_receipt(start: Start) -> dict[str, Any]:
    return {
        "run_id": str(start.run_id),
        "suspension_id": str(start.suspension_id),
        "run_revision": start.run_revision,
        "request_digest": start.request_digest,
        "started_at": digests.rfc3339(start.started_at),
        "digest": start.digest,
        "valid": digests.start_digest(
            run_id=start.run_id,
            suspension_id=start.suspension_id,
            run_revision=start.run_revision,
            request_digest=start.request_digest,
            started_at=start.started_at,
        )
        == start.digest,
    }


def run_body(run: Run) -> dict[str, Any]:
    """A run: the answer to a register or an end, and each row of GET /runs (api/shapes.RunOut renders through it).

    Its times are written as DRF's DateTimeField writes them, which this body
    always used: ISO 8601 in UTC with a Z, microseconds only when there are
    some (tests/api/test_shapes.py holds it to RunOut's fields, value for value).
    """
    return {
        "id": str(run.id),
        "scope": _text(run.scope),
        "agent_id": _text(run.agent_id),
        "session_id": _text(run.session_id),
        "state": _text(run.state),
        "revision": None if run.revision is None else int(run.revision),
        "error": _text(run.error),
        "last_reason": _text(run.last_reason),
        "tags": list(run.tags),
        "created_at": digests.rfc3339(run.created_at, "auto"),
        "updated_at": digests.rfc3339(run.updated_at, "auto"),
        "suspension_id": _text(getattr(run, "live_suspension_id", None)),
    }


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def suspension_body(s: Suspension) -> dict[str, Any]:
    """The pause as the engine gave it (RunConfig's absent tools_restricted reads as false)."""
    continuation = json.loads(s.continuation)
    config = continuation.get("config")
    if isinstance(config, dict):
        config.setdefault("tools_restricted", False)
    return {
        "id": str(s.id),
        "run_id": str(s.run_id),
        "scope": s.scope,
        "reason": s.reason,
        "pending": json.loads(s.pending),
        "continuation": continuation,
        "expires_at": digests.rfc3339(s.expires_at),
        "created_at": digests.rfc3339(s.created_at),
        "correlation_id": s.correlation_id or None,
        "engine_version": s.engine_version or None,
        "tags": list(s.tags),
    }


def suspension_detail(s: Suspension) -> dict[str, Any]:
    """The pause with where its run is now (GET /suspensions/{id}, the answer to a suspend)."""
    return {**suspension_body(s), "run_revision": s.run.revision, "run_state": s.run.state}


def suspension_summary(s: Suspension) -> dict[str, Any]:
    """A list row: the pause without its (possibly large) continuation."""
    return {
        "id": str(s.id),
        "run_id": str(s.run_id),
        "scope": s.scope,
        "agent_id": s.run.agent_id,
        "reason": s.reason,
        "pending": json.loads(s.pending),
        "expires_at": digests.rfc3339(s.expires_at),
        "created_at": digests.rfc3339(s.created_at),
        "run_revision": s.run.revision,
        "run_state": s.run.state,
        "correlation_id": s.correlation_id or None,
        "tags": list(s.tags),
    }


def claimed_body(claimed: Any) -> dict[str, Any]:
    """A claim or a start (services.Claimed): receipts; only a fresh grant of execution carries the pause."""
    body: dict[str, Any] = {
        "run_id": str(claimed.run.id),
        "run_revision": claimed.run.revision,
        "run_state": claimed.run.state,
    }
    if claimed.admission is not None:
        admission_fresh = claimed.fresh if claimed.admission_fresh is None else claimed.admission_fresh
        body["admission"] = admission_receipt(claimed.admission, fresh=admission_fresh)
    if claimed.start is not None:
        body["start"] = start_receipt(claimed.start)
    body["fresh"] = claimed.fresh
    if claimed.fresh and claimed.suspension is not None:
        body["suspension"] = suspension_body(claimed.suspension)
        if claimed.results is not None:
            body["results"] = claimed.results
        elif claimed.admission is not None:
            body["input"] = claimed.admission.input
    return body


def paused_body(paused: Any, callback_url: str | None = None) -> dict[str, Any]:
    """The answer to a pause (services.Paused): the pause, its callback URL, the resume its early results made.

    A pause resumed at once is shown as it was stored (`run_state` paused, the
    `run_revision` of its claim version), so that `{run_id, id, run_revision}`
    stays its claim version; `resume` says where the run is now.
    """
    body = suspension_detail(paused.suspension)
    if callback_url is not None:
        body["callback_url"] = callback_url
    if paused.resume is not None:
        body["run_revision"] = paused.resume.admission.version_revision
        body["run_state"] = "paused"
        body["resume"] = claimed_body(paused.resume)
    return body


def early_result_body(kept: Any) -> dict[str, Any]:
    """A kept early result (services.Kept); with the resume it completed, when it was the last one missing."""
    early = kept.early
    body: dict[str, Any] = {
        "run_id": str(early.run_id),
        "call_id": early.call_id,
        "digest": early.digest,
        "expires_at": digests.rfc3339(early.expires_at),
        "fresh": kept.fresh,
    }
    if kept.resume is not None:
        body["resume"] = claimed_body(kept.resume)
    return body


def _decision_head(decision: str, answer: Any) -> dict[str, Any]:
    """What a denial and a vote answer alike: the decision, the pause, where its run is, freshness."""
    return {
        "decision": decision,
        "run_id": str(answer.run.id),
        "suspension_id": str(answer.suspension_id),
        "run_state": answer.run.state,
        "run_revision": answer.run.revision,
        "fresh": answer.fresh,
    }


def denied_body(denied: Any) -> dict[str, Any]:
    """A denial (services.Denied)."""
    return {**_decision_head("deny", denied), "reason": denied.reason}


def voted_body(voted: Any) -> dict[str, Any]:
    """A vote short of the quorum (services.Voted): the run is still paused at the same revision (202)."""
    return {**_decision_head("approve", voted), "votes": voted.votes, "quorum": voted.quorum, "voters": voted.voters}


def asked_call(call: dict[str, Any]) -> dict[str, Any]:
    """A pending call as an approver sees it: with its schema and whether it may be edited."""
    shown = {
        "id": call["id"],
        "name": call["name"],
        "arguments": call["arguments"],
        "editable": call.get("editable", False),
    }
    shown["arguments_schema"] = call.get("arguments_schema")
    return shown


def vote_row(vote: ApprovalVote) -> dict[str, Any]:
    return {"voter": vote.voter, "cast_at": digests.rfc3339(vote.cast_at), "note": vote.note}


def approval_body(
    record: Approval, run: Run | None, admission: Admission | None, votes: Sequence[ApprovalVote] = ()
) -> dict[str, Any]:
    """One approval, pending or decided, with what was asked, its policy and votes, and where its run is now."""
    calls = json.loads(record.pending) if record.pending else []
    version = None
    if record.status == ApprovalStatus.PENDING and run is not None and run.state == RunState.PAUSED:
        version = digests.version_dict(record.run_id, record.suspension_id, run.revision)
    return {
        "suspension_id": str(record.suspension_id),
        "run_id": str(record.run_id),
        "scope": record.scope,
        "agent_id": record.agent_id,
        "status": record.status,
        "calls": [asked_call(c) for c in calls],
        "policy": record.policy,
        "floor": record.floor,
        "votes": [vote_row(v) for v in votes],
        # What was decided: the calls as admitted (an approve) or the answer in words (a respond).
        "final_calls": json.loads(record.final_calls) if record.final_calls else None,
        "response": record.response or None,
        "escalated_at": digests.rfc3339(record.escalated_at),
        "requested_by": record.requested_by,
        "created_at": digests.rfc3339(record.created_at),
        "expires_at": digests.rfc3339(record.expires_at),
        "decided_by": record.decided_by,
        "note": record.note,
        "resolved_at": digests.rfc3339(record.resolved_at),
        "admission_id": str(admission.id) if admission is not None else None,
        "run_state": run.state if run is not None else None,
        "version": version,
        "tags": list(record.tags),
    }


def expiry_receipt(receipt: ExpiryReceipt) -> dict[str, Any]:
    """The proof of a T9 expiry, with its integrity check (`valid`)."""
    return {
        "run_id": str(receipt.run_id),
        "suspension_id": str(receipt.suspension_id),
        "scope": receipt.scope,
        "request_digest": receipt.request_digest,
        "run_revision": receipt.run_revision,
        "expired_at": digests.rfc3339(receipt.expired_at),
        "event_id": receipt.event_id,
        "digest": receipt.digest,
        # Integrity only: recomputed from what is stored; it grants nothing.
        "valid": digests.expiry_digest(
            run_id=receipt.run_id,
            suspension_id=receipt.suspension_id,
            scope=receipt.scope,
            request_digest=receipt.request_digest,
            run_revision=receipt.run_revision,
            expired_at=receipt.expired_at,
        )
        == receipt.digest,
    }


def closure_receipt(receipt: ClosureReceipt, *, fresh: bool) -> dict[str, Any]:
    """The proof of a T10 closure, with its integrity check (`valid`)."""
    return {
        "id": str(receipt.id),
        "run_id": str(receipt.run_id),
        "suspension_id": str(receipt.suspension_id),
        "scope": receipt.scope,
        "request": json.loads(receipt.request),
        "request_digest": receipt.request_digest,
        "run_revision": receipt.run_revision,
        "event_id": receipt.event_id,
        "actor": receipt.actor,
        "closed_at": digests.rfc3339(receipt.closed_at),
        "digest": receipt.digest,
        # Integrity only: recomputed from what is stored; it grants nothing.
        "valid": digests.sha256_hex(receipt.request) == receipt.request_digest
        and digests.closure_digest(receipt) == receipt.digest,
        "fresh": fresh,
    }


def parked_body(parked: Any) -> dict[str, Any]:
    """A parked flow wait (services.ParkedWait): the correlation id to embed in the dispatch."""
    suspension = parked.suspension
    return {
        "correlation_id": parked.wait.correlation_id,
        "store_key": parked.wait.store_key,
        "user_id": parked.user_id,
        "scope": parked.wait.scope,
        "run_id": str(suspension.run.id),
        "suspension_id": str(suspension.id),
        "run_revision": suspension.run.revision,
        "reason": suspension.reason,
        "expires_at": digests.rfc3339(suspension.expires_at),
    }


def approval_floor(floor: ApprovalFloor) -> dict[str, Any]:
    """An approval floor as operators read it."""
    return {
        "id": str(floor.id),
        "scope": floor.scope,
        "quorum": floor.quorum,
        "exclude_requester": floor.exclude_requester,
        "on_expiry": list(floor.on_expiry),
        "require_linked_person": floor.require_linked_person,
        "require_escalation": floor.require_escalation,
        "created_by": floor.created_by,
        "created_at": digests.rfc3339(floor.created_at),
        "updated_by": floor.updated_by,
        "updated_at": digests.rfc3339(floor.updated_at),
    }


def webhook_endpoint(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """An endpoint as operators read it: never its secrets (they are shown once, by create and rotate)."""
    return {
        "id": str(endpoint.id),
        "scope": endpoint.scope,
        "url": endpoint.url,
        "event_types": list(endpoint.event_types),
        "format": endpoint.format,
        "active": endpoint.active,
        "disabled_reason": endpoint.disabled_reason,
        "description": endpoint.description,
        "created_by": endpoint.created_by,
        "created_at": digests.rfc3339(endpoint.created_at),
        "previous_secret_expires_at": digests.rfc3339(endpoint.previous_secret_expires_at),
    }


def notification_route(route: NotificationRoute) -> dict[str, Any]:
    """A notification route as operators read it (docs/notifications.md, "Routes")."""
    return {
        "id": str(route.id),
        "scope": route.scope,
        "kind": route.kind,
        "target": route.target,
        "event_types": list(route.event_types),
        "active": route.active,
        "description": route.description,
        "created_by": route.created_by,
        "created_at": digests.rfc3339(route.created_at),
    }


def webhook_endpoint_with_secret(endpoint: WebhookEndpoint, secret: str) -> dict[str, Any]:
    """The answer to a create or a rotation: the one time the signing secret is shown."""
    return {**webhook_endpoint(endpoint), "secret": secret}


def webhook_message(message: WebhookMessage) -> dict[str, Any]:
    """One delivery with its attempts, oldest attempt first (prefetched by selectors.webhook_messages)."""
    return {
        "id": str(message.id),
        "endpoint_id": str(message.endpoint_id),
        "event_id": message.event_id,
        "run_id": str(message.run_id) if message.run_id else None,
        "type": message.type,
        "status": message.status,
        "attempt_count": message.attempts,
        "next_attempt_at": digests.rfc3339(message.next_attempt_at),
        "created_at": digests.rfc3339(message.created_at),
        "delivered_at": digests.rfc3339(message.delivered_at),
        "body": message.body,
        "attempts": [
            {
                "number": a.number,
                "at": digests.rfc3339(a.at),
                "status_code": a.status_code,
                "error": a.error,
                "duration_ms": a.duration_ms,
            }
            for a in message.attempt_rows.all()
        ],
    }


# -- JSON text for people (the console and the admin) ------------------------------------------


def pretty_json_text(text: Any) -> str:
    """Arguments arrive as JSON text from the model: indent them when they parse, else show them verbatim."""
    if not isinstance(text, str):
        return pretty(text)
    try:
        return pretty(json.loads(text))
    except ValueError:
        return text


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


# -- the audit export (docs/api.md, "7.14 Audit") ------------------------------------------------


def audit_public_key(public_key: str) -> dict[str, Any]:
    return {
        "algorithm": "ed25519",
        "public_key": public_key,
        "encoding": "base64 of the 32 raw bytes",
        "signs": "each audit checkpoint: its workspace, seq, at, previous and root (docs/auditors.md)",
    }


def audit_event_line(e: Mapping[str, Any]) -> dict[str, Any]:
    """One event of `GET /audit/export`: the fields its hash covers (`at` as hashed) and its two hashes."""
    return {
        "type": "event",
        "id": e["id"],
        "run_id": str(e["run_id"]),
        "scope": e["scope"],
        "kind": e["kind"],
        "actor": e["actor"],
        "revision": e["revision"],
        "data": e["data"],
        "at": digests.rfc3339(e["at"]),
        "prev_hash": e["prev_hash"],
        "hash": e["hash"],
    }


def audit_checkpoint_line(checkpoint: AuditCheckpoint, runs: list[list[Any]]) -> dict[str, Any]:
    """One checkpoint of the export with only the reader's `runs` lines; `complete` says whether that is all of them
    (then the root can be recomputed from the lines; otherwise the signature and the root chain still check).
    `workspace` names its chain ("" for the legacy one; docs/auditors.md)."""
    return {
        "type": "checkpoint",
        "workspace": checkpoint.workspace,
        "seq": checkpoint.seq,
        "at": digests.rfc3339(checkpoint.at),
        "previous": checkpoint.previous,
        "root": checkpoint.root,
        "signature": checkpoint.signature,
        "algorithm": "ed25519",
        "runs": runs,
        "complete": len(runs) == len(checkpoint.runs),
    }


# -- webhook bodies (docs/api.md, "Event types") -------------------------------------------------


def webhook_body(event: OutboxEvent, format: str = WebhookFormat.STANDARD) -> str:
    """The exact body sent on every attempt: `{"type","timestamp","data"}` as canonical JSON, or Slack's text."""
    if format == WebhookFormat.SLACK:
        return digests.canonical({"text": slack_text(event)}).decode("utf-8")
    body = {"type": event.type, "timestamp": digests.rfc3339(event.created_at), "data": event.data}
    return digests.canonical(body).decode("utf-8")


def slack_text(event: OutboxEvent) -> str:
    """A readable line for a Slack incoming webhook: agent, tools, deadline, tags and the console link."""
    d = event.data
    base = settings.CONSOLE_BASE_URL
    tagged = f" Tags: {slack_escape(', '.join(d['tags']))}." if d.get("tags") else ""
    if event.type == EventType.APPROVAL_REQUESTED:
        tools = ", ".join(d.get("tools") or []) or "a tool"
        deadline = d.get("deadline") or "no deadline"
        link = f"{base}/console/approvals/{d.get('suspension_id')}/"
        text = (
            f"Approval needed: {slack_escape(d.get('agent_id') or 'an agent')} wants to call {slack_escape(tools)} "
            f"in {slack_escape(event.scope)}. Deadline: {deadline}.{tagged}"
        )
        return f"{text} <{link}|Approve or deny>"
    if event.type == EventType.AUDIT_CHECKPOINT:
        return f"Audit checkpoint {d.get('seq')} of {slack_escape(event.scope)}: root {d.get('root')}, signed."
    link = f"{base}/console/runs/{d.get('run_id')}/"
    detail = f" ({d['decision']} by {slack_escape(d.get('decided_by', ''))})" if "decision" in d else ""
    text = (
        f"{event.type}{detail}: run {d.get('run_id')} in {slack_escape(event.scope)} is {d.get('state', '?')}.{tagged}"
    )
    return f"{text} <{link}|Open the run>"


def slack_escape(text: str) -> str:
    # Slack's control characters: engine-supplied names must not become links or mentions.
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
