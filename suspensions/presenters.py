"""Text for people and the webhook bodies: what is rendered from the rows but is no answer of the API.

The API's answer bodies are declared once, in suspensions/wire (pydantic
models that build them and document them); the console, email and Slack read
those too. Here: JSON pretty-printed for the console and the admin, the exact
body of a webhook attempt, and Slack's text. Nothing here touches the database.
"""

import json
from typing import Any

from django.conf import settings

from . import digests
from .models import EventType, OutboxEvent, Start, WebhookFormat
from .wire.answers import StartReceiptOut


def start_receipt(start: Start) -> dict[str, Any]:
    """The start receipt a `resume_already_started` refusal carries (services/resumes.py reads it here)."""
    return StartReceiptOut.of(start).wire()


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
