"""Plain dicts and strings for the console templates: nothing here touches the database.

Templates receive only what these functions build, so no query can fire while
rendering and every untrusted string reaches the template as plain text (the
template escapes it).
"""

import json
from datetime import datetime
from typing import Any

from ..models import Admission, Approval, ClosureReceipt, Event, ExpiryReceipt, Reason, Start, Suspension
from ..presenters import pretty, pretty_json_text  # noqa: F401 (the templates' helpers, shared with the admin)
from ..timefmt import ISO_TIME, duration, parse
from ..wire.answers import AdmissionRowOut, ClosureReceiptOut, ExpiryReceiptOut, StartReceiptOut

# Below these many seconds to the deadline a row is drawn as urgent / soon.
URGENT_SECONDS = 5 * 60
SOON_SECONDS = 60 * 60


def countdown(expires_at: datetime | None, now: datetime) -> dict[str, Any]:
    """The deadline as text rendered server-side ("in 4 min"); the script may tick it."""
    if expires_at is None:
        return {"text": "no deadline", "iso": "", "urgency": "none"}
    left = (expires_at - now).total_seconds()
    if left <= 0:
        text, urgency = "expired", "expired"
    else:
        text = f"in {duration(left)}"
        urgency = "urgent" if left < URGENT_SECONDS else "soon" if left < SOON_SECONDS else "later"
    return {"text": text, "iso": expires_at.isoformat(), "urgency": urgency}


def age(moment: datetime, now: datetime) -> str:
    return f"{duration((now - moment).total_seconds())} ago"


def short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def pending_calls(pending_text: str) -> list[dict[str, Any]]:
    calls = loads(pending_text)
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def call_rows(pending_text: str) -> list[dict[str, Any]]:
    """Each pending call with its arguments pretty-printed (json.dumps indent=2)."""
    return call_list(pending_calls(pending_text))


def call_list(calls: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            **c,
            "id": str(c.get("id", "")),
            "name": str(c.get("name", "")),
            "arguments": pretty_json_text(c.get("arguments", "")),
            "reply_with": str(c.get("reply_with", "") or ""),
        }
        for c in calls
        if isinstance(c, dict)
    ]


def approval(body: dict[str, Any]) -> dict[str, Any]:
    """The approval body (approval_reads.find_approval, the API's shape) for the page: calls pretty-printed."""
    return {**body, "id": body["suspension_id"], "calls": call_list(body["calls"])}


def inbox_row(s: Suspension, now: datetime) -> dict[str, Any]:
    calls = pending_calls(s.pending)
    return {
        "id": str(s.id),
        "run_id": str(s.run_id),
        # The version this row shows, for deciding several at once from the inbox (console/bulk.py).
        "run_revision": s.run.revision,
        "agent_id": s.run.agent_id,
        "scope": s.scope,
        "calls": [
            {"name": str(c.get("name", "")), "preview": short(str(c.get("arguments", "")), 70)} for c in calls[:3]
        ],
        "more_calls": max(len(calls) - 3, 0),
        "tags": list(s.tags),
        "age": age(s.created_at, now),
        "created_at": s.created_at.isoformat(),
        "deadline": countdown(s.expires_at, now),
        "at_risk": at_risk(s, now),
    }


def at_risk(s: Suspension, now: datetime) -> bool:
    """An approval pause past 80% of its window, created to deadline (docs/console.md): marked in the inbox."""
    moment = Approval.at_risk_from(s.created_at, s.expires_at) if s.reason == Reason.APPROVAL else None
    return moment is not None and moment <= now


def message_row(index: int, message: Any) -> dict[str, Any]:
    if not isinstance(message, dict):
        return {"index": index, "role": "?", "content": pretty(message), "tool_calls": "", "tool_call_id": ""}
    content = message.get("content")
    return {
        "index": index,
        "role": str(message.get("role", "?")),
        "content": content if isinstance(content, str) else ("" if content is None else pretty(content)),
        "tool_calls": pretty(message["tool_calls"]) if message.get("tool_calls") else "",
        "tool_call_id": str(message.get("tool_call_id", "") or ""),
    }


def conversation(continuation: dict[str, Any]) -> dict[str, Any]:
    """Messages split at new_messages_from: loaded history before it, this run's own messages after."""
    messages = continuation.get("messages")
    messages = messages if isinstance(messages, list) else []
    boundary = continuation.get("new_messages_from")
    boundary = boundary if isinstance(boundary, int) and 0 <= boundary <= len(messages) else 0
    rows = [message_row(i, m) for i, m in enumerate(messages)]
    return {"history": rows[:boundary], "new": rows[boundary:], "boundary": boundary, "total": len(rows)}


def run_config(continuation: dict[str, Any]) -> dict[str, Any]:
    config = continuation.get("config")
    config = config if isinstance(config, dict) else {}
    tools = config.get("tools")
    return {
        "model": str(config.get("model", "")),
        "temperature": config.get("temperature"),
        "max_steps": config.get("max_steps"),
        "max_tokens": config.get("max_tokens"),
        "step_index": continuation.get("step_index"),
        "tokens_used": continuation.get("tokens_used"),
        "tools": [str(t) if not isinstance(t, dict) else str(t.get("name", pretty(t))) for t in tools]
        if isinstance(tools, list)
        else [],
        # An absent flag reads as false (docs/api.md, "1. Words"): it may be lost, never invented.
        "tools_restricted": bool(config.get("tools_restricted", False)),
        "all_tools_restricted": bool(config.get("all_tools_restricted", False)),
        "full": pretty(config),
    }


def event_row(e: Event) -> dict[str, Any]:
    data = e.data if isinstance(e.data, dict) else {"data": e.data}
    return {
        "id": e.id,
        "kind": e.kind,
        "actor": e.actor,
        "revision": e.revision,
        "at": e.at,
        "data": [data_item(str(k), v) for k, v in data.items()],
    }


def data_item(key: str, value: Any) -> dict[str, Any]:
    """One key of an event's data; a value that is a time is also a moment, shown as the page's other times."""
    text = value if isinstance(value, str) else json.dumps(value)
    moment = parse(text) if isinstance(value, str) and ISO_TIME.fullmatch(text) else None
    return {"key": key, "value": text, "moment": moment}


def admission_row(a: Admission) -> dict[str, Any]:
    """The API's admission row (wire.answers), with the times as moments for the templates to show."""
    return {**AdmissionRowOut.of(a).wire(), "version_revision": a.version_revision, "admitted_at": a.admitted_at}


def start_row(s: Start) -> dict[str, Any]:
    extra = {"id": str(s.id), "admission_id": str(s.admission_id), "actor": s.actor, "started_at": s.started_at}
    return {**StartReceiptOut.of(s).wire(), **extra}


def expiry_row(x: ExpiryReceipt) -> dict[str, Any]:
    return {**ExpiryReceiptOut.of(x).wire(), "expired_at": x.expired_at}


def closure_row(c: ClosureReceipt) -> dict[str, Any]:
    return {**ClosureReceiptOut.of(c, fresh=False).wire(), "closed_at": c.closed_at}
