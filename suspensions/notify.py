"""Approver emails (DESIGN §14): one on `approval.requested`, one reminder at 80% of the time to deadline.

Both leave after a commit, never inside a transaction: the outbox fan-out
calls `on_outbox_event` once the event is dispatched, and the reminder task
claims its approvals (`reminded_at`) in a committed transaction before it
sends. A mail failure is logged and swallowed: the webhook fan-out that
called us must go on, and a lost email is less harm than a lost delivery.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.utils.html import format_html, format_html_join

from . import scopes, selectors
from .models import Approval, ApprovalStatus, EventType

log = logging.getLogger(__name__)

APPROVAL_REQUESTED = EventType.APPROVAL_REQUESTED.value
APPROVAL_ESCALATED = EventType.APPROVAL_ESCALATED.value
LEADS = {
    "request": "A run is paused until an approver decides.",
    "reminder": "Still pending, and 80% of the time to its deadline has passed.",
    "escalation": "Escalated to you: nobody answered by the deadline, which has been extended once.",
}
PREFIXES = {"request": "", "reminder": "Reminder: ", "escalation": "Escalated: "}
# Each call's arguments in the mail: enough to recognise the request, never the whole payload.
ARGUMENT_CHARS = 300
SUBJECT_CHARS = 150


def on_outbox_event(event: Any) -> None:
    """Called by the outbox fan-out, after commit, for each dispatched OutboxEvent; never raises.

    `approval.requested` mails the approvers of the approval's scope;
    `approval.escalated` (DESIGN §15) those of its parent scope. The event's
    data carries ids and tool names, not the arguments: the Approval record
    keeps the calls.
    """
    kind = {APPROVAL_REQUESTED: "request", APPROVAL_ESCALATED: "escalation"}.get(str(getattr(event, "type", "")))
    if kind is None:
        return
    try:
        approval = _approval_of(event)
        # Decided (or expired) before the fan-out ran: nobody needs to be asked any more.
        if approval is not None and approval.status == ApprovalStatus.PENDING:
            send_approval_mail(approval, kind=kind)
    except Exception:
        log.exception("approver email for outbox event %s failed", getattr(event, "pk", None))


def _approval_of(event: Any) -> Approval | None:
    data = event.data if isinstance(event.data, dict) else {}
    suspension_id = data.get("suspension_id")
    if suspension_id:
        return Approval.objects.filter(pk=suspension_id).first()
    if event.run_id:
        return Approval.objects.filter(run_id=event.run_id).order_by("-created_at").first()
    return None


def send_approval_mail(approval: Approval, *, kind: str = "request") -> int:
    """Mail every approver covering the approval's scope, one message each; returns how many were sent.

    An escalation goes to the approvers covering the parent scope (a top-level
    scope has none: its own approvers). A backend failure is logged, not raised (0 sent).
    """
    scope = scopes.parent(approval.scope) if kind == "escalation" else approval.scope
    recipients = list(selectors.approvers_covering(scope).values_list("email", flat=True))
    if not recipients:
        return 0
    subject, text, html = render(approval, kind=kind)
    messages = []
    for address in recipients:
        message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [address])
        message.attach_alternative(html, "text/html")
        messages.append(message)
    try:
        # One message per approver: no approver learns the others' addresses.
        return get_connection().send_messages(messages) or 0
    except Exception:
        log.exception(
            "approver email for approval %s failed",
            approval.pk,
            extra={"suspension_id": str(approval.pk), "kind": kind, "recipients": len(recipients)},
        )
        return 0


# -- the message ---------------------------------------------------------------------------


def console_link(approval: Approval) -> str:
    return f"{settings.CONSOLE_BASE_URL}/console/approvals/{approval.pk}/"


def deadline_text(approval: Approval) -> str:
    if approval.expires_at is None:
        return "no deadline"
    return approval.expires_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def calls_of(approval: Approval) -> list[tuple[str, str]]:
    """(tool name, arguments truncated to ARGUMENT_CHARS) of each pending call, in order."""
    try:
        calls = json.loads(approval.pending or "[]")
    except ValueError:
        return []
    out = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        arguments = call.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append((str(call.get("name", "?")), truncate(arguments, ARGUMENT_CHARS)))
    return out


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(approval: Approval, *, kind: str = "request") -> tuple[str, str, str]:
    """(subject, plain text, HTML) of the approver email; the HTML escapes every value."""
    calls = calls_of(approval)
    agent = approval.agent_id or "an agent"
    tools = ", ".join(dict.fromkeys(name for name, _ in calls)) or "a tool"
    # A header may not hold a line break: agent ids and tool names are the engine's text.
    subject = " ".join(f"{PREFIXES[kind]}Approval needed: {agent} wants to call {tools}".split())
    subject = truncate(subject, SUBJECT_CHARS)
    deadline, link = deadline_text(approval), console_link(approval)
    lead = LEADS[kind]
    text_lines = [lead, "", f"Agent: {agent}", f"Scope: {approval.scope}", "Calls:"]
    text_lines += [f"  {name}({arguments})" for name, arguments in calls]
    text_lines += ["", f"Deadline: {deadline}", f"Approve or deny: {link}", ""]
    html = format_html(
        "<p>{}</p><p>Agent: <b>{}</b><br>Scope: {}</p><p>Calls:</p><ul>{}</ul>"
        '<p>Deadline: {}</p><p><a href="{}">Approve or deny</a></p>',
        lead,
        agent,
        approval.scope,
        format_html_join("", "<li><code>{}</code>(<code>{}</code>)</li>", calls),
        deadline,
        link,
    )
    return subject, "\n".join(text_lines), str(html)
