"""The Slack messages (Block Kit): an approval asked with its buttons, the outcome once decided, the deny modal.

What the message says is the approver email's (suspensions/notify.py): the
agent, the scope, each call with its arguments truncated the same way
(`calls_of`), the deadline and the console link. Every value that comes from
an engine is escaped (presenters.slack_escape): a tool name must never
become a mention or a link.

A button's `value` carries the approval and the claim version the message
was posted for; the decide service refuses it once that version is stale,
so an old message can never decide a later pause of the same run.
"""

import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from .. import display, strictjson
from ..models import Approval, ApprovalStatus
from ..notify import calls_of, console_link, deadline_text, truncate
from ..presenters import slack_escape

APPROVE, DENY, OPEN = "approve", "deny", "open"
DENY_MODAL = "deny"
REASON = "reason"
# Slack's limits: 50 blocks a message, 3000 characters a section, 150 a header, 3000 a modal's metadata.
MAX_CALLS = 40
SECTION_CHARS = 2900
HEADERS = {"request": "Approval needed", "escalation": "Escalated: approval needed", "reminder": "Still pending"}
OUTCOMES = {
    ApprovalStatus.APPROVED: "Approved",
    ApprovalStatus.DENIED: "Denied",
    ApprovalStatus.RESPONDED: "Answered in words",
    ApprovalStatus.EXPIRED: "Expired: nobody answered in time",
    ApprovalStatus.CANCELLED: "Cancelled",
}


@dataclass(frozen=True)
class Pressed:
    """What a button's value names: the approval and the claim version its message showed."""

    approval_id: UUID
    run_id: UUID
    run_revision: int


def button_value(approval: Approval, run_revision: int) -> str:
    return json.dumps({"approval": str(approval.pk), "run_id": str(approval.run_id), "revision": run_revision})


def parse_value(value: str) -> Pressed:
    """The button's value back; ValueError (or KeyError, TypeError) when it is not one of ours."""
    data = strictjson.loads(value)
    return Pressed(UUID(data["approval"]), UUID(data["run_id"]), int(data["revision"]))


def _summary(approval: Approval) -> list[dict[str, Any]]:
    """The agent, scope, deadline, tags (when the pause has them) and each call with its arguments."""
    lines = [
        f"*Agent:* {slack_escape(display.escaped(approval.agent_id or 'an agent'))}",
        f"*Scope:* {slack_escape(approval.scope)}",
        f"*Deadline:* {deadline_text(approval)}",
    ]
    # Tags (docs/api.md, "`POST /runs` — register (T1)"), on pauses that carry them.
    tags = getattr(approval, "tags", None)
    if tags:
        lines.append("*Tags:* " + ", ".join(f"`{slack_escape(str(t))}`" for t in tags))
    blocks = [_section("\n".join(lines))]
    calls = calls_of(approval)
    for name, arguments in calls[:MAX_CALLS]:
        blocks.append(_section(f"`{slack_escape(name)}`\n```{slack_escape(arguments)}```"))
    if len(calls) > MAX_CALLS:
        blocks.append(_section(f"…and {len(calls) - MAX_CALLS} more calls: see the console."))
    return blocks


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, SECTION_CHARS)}}


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text}}


def _tools(approval: Approval) -> str:
    return ", ".join(dict.fromkeys(name for name, _ in calls_of(approval))) or "a tool"


def request_message(approval: Approval, *, run_revision: int, kind: str = "request") -> dict[str, Any]:
    """chat.postMessage's `text` (the notification's fallback) and `blocks` for a pending approval."""
    value = button_value(approval, run_revision)
    buttons = [
        {"type": "button", "action_id": APPROVE, "style": "primary", "value": value, "text": _plain("Approve")},
        {"type": "button", "action_id": DENY, "style": "danger", "value": value, "text": _plain("Deny")},
        {"type": "button", "action_id": OPEN, "url": console_link(approval), "text": _plain("Open")},
    ]
    header = HEADERS.get(kind, HEADERS["request"])
    blocks = [_header(header), *_summary(approval), {"type": "actions", "block_id": "decide", "elements": buttons}]
    agent = slack_escape(display.escaped(approval.agent_id or "an agent"))
    return {"text": f"{header}: {agent} wants to call {slack_escape(_tools(approval))}", "blocks": blocks}


def delegate_text(approval: Approval, acting_for: str) -> str:
    """A delegate's direct message (docs/identity.md, "Delegation"): what waits, for whom, and the console link."""
    agent = slack_escape(display.escaped(approval.agent_id or "an agent"))
    who = slack_escape(acting_for)
    link = f"<{console_link(approval, acting_for)}|decide for {who} in the console>"
    return f"In place of {who}, who is away: {agent} wants to call {slack_escape(_tools(approval))}; {link}"


def decided_message(approval: Approval) -> dict[str, Any]:
    """chat.update's `text` and `blocks` once the approval is no longer pending: the outcome, who, no buttons."""
    outcome = OUTCOMES.get(ApprovalStatus(approval.status), str(approval.status))
    who = f" by {slack_escape(approval.decided_by)}" if approval.decided_by else ""
    if approval.acting_for:
        who += f" for {slack_escape(approval.acting_for)}"
    line = f"*{outcome}*{who}"
    if approval.note:
        line += f": {slack_escape(truncate(approval.note, 500))}"
    link = f"<{console_link(approval)}|Open in the console>"
    blocks = [_section(line), *_summary(approval), {"type": "context", "elements": [_mrkdwn(link)]}]
    agent = slack_escape(display.escaped(approval.agent_id or "an agent"))
    return {"text": f"{outcome}{who}: {agent} asked to call {slack_escape(_tools(approval))}", "blocks": blocks}


def deny_modal(value: str, *, channel: str, message_ts: str) -> dict[str, Any]:
    """views.open's modal asking for the denial's reason; its submission carries the button's value back."""
    metadata = json.dumps({"value": value, "channel": channel, "ts": message_ts})
    reason = {"type": "plain_text_input", "action_id": REASON, "multiline": True, "max_length": 2000}
    return {
        "type": "modal",
        "callback_id": DENY_MODAL,
        "private_metadata": metadata,
        "title": _plain("Deny the approval"),
        "submit": _plain("Deny"),
        "close": _plain("Cancel"),
        "blocks": [{"type": "input", "block_id": REASON, "label": _plain("Reason"), "element": reason}],
    }


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": text}
