"""Approver emails (docs/notifications.md, "Email"): the email sender of notifications, and what the email says.

Who gets which email is decided when the notifications are written
(services.notifications, in the outbox fan-out's or the reminder's
transaction); `send` is the email channel's sender: called from Celery
outside any transaction with one claimed Notification, it sends one message
to its one recipient and raises on any failure, so the delivery records the
attempt and tries again on the webhooks' schedule. Nothing is swallowed: a
lost email is a failed delivery, kept and visible, not a log line.

An approver's own email (the notification names its user) carries one-click
Approve and Deny links (suspensions.email_links) while the pause is open; a
route's address gets the console link only: nobody's capability to decide.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from . import display, email_links
from .models import Approval, ApprovalStatus, Run, Suspension

log = logging.getLogger(__name__)

LEADS = {
    "request": "A run is paused until an approver decides.",
    "reminder": "Still pending, and 80% of the time to its deadline has passed.",
    "escalation": "Escalated to you: nobody answered by the deadline, which has been extended once.",
}
# An escalation chain's step (docs/policies.md, "Escalation chains") asks before any deadline moved.
CHAIN_LEAD = "Escalated to you: nobody has answered this approval yet."
PREFIXES = {"request": "", "reminder": "Reminder: ", "escalation": "Escalated: "}
# A delegate's email (docs/identity.md, "Delegation"): whom they stand in for.
DELEGATE_LEAD = "You are asked in place of {name}, who is away and named you their delegate: decide for them."
# Each call's arguments in the mail: enough to recognise the request, never the whole payload.
ARGUMENT_CHARS = 300
SUBJECT_CHARS = 150
# The header naming the notification a message delivers: a retried send carries the same one.
NOTIFICATION_HEADER = "X-Suspensions-Notification"


def send(notification: Any) -> None:
    """Send one approver email notification; raises on any failure (the delivery retries it)."""
    approval = Approval.objects.filter(pk=notification.approval_id).first()
    if approval is None:
        raise LookupError(f"approval {notification.approval_id} does not exist")
    links = decision_links(approval, notification.user_id) if notification.user_id else None
    lead = CHAIN_LEAD if notification.step else None
    if notification.acting_for:  # a delegate, asked in place of someone away: the console, never a one-click link
        lead = DELEGATE_LEAD.format(name=notification.acting_for)
    subject, text, html = render(
        approval, kind=notification.kind, links=links, lead=lead, acting_for=notification.acting_for
    )
    headers = {NOTIFICATION_HEADER: str(notification.pk)}
    message = EmailMultiAlternatives(
        subject, text, settings.DEFAULT_FROM_EMAIL, [notification.recipient], headers=headers
    )
    message.attach_alternative(html, "text/html")
    if get_connection(fail_silently=False).send_messages([message]) != 1:
        raise RuntimeError("the mail backend sent nothing")


def decision_links(approval: Approval, user_id: int) -> dict[str, str] | None:
    """The approver's Approve and Deny links at the pause's current version; None once it is no longer open."""
    if approval.status != ApprovalStatus.PENDING or not Suspension.objects.filter(pk=approval.pk).exists():
        return None
    revision = Run.objects.filter(pk=approval.run_id).values_list("revision", flat=True).first()
    if revision is None:
        return None
    return email_links.links(
        user_id=user_id,
        approval_id=approval.pk,
        run_id=approval.run_id,
        revision=revision,
        deadline=approval.expires_at,
        now=timezone.now(),
    )


# -- the message ---------------------------------------------------------------------------


def console_link(approval: Approval, acting_for: str = "") -> str:
    link = f"{settings.CONSOLE_BASE_URL}/console/approvals/{approval.pk}/"
    return f"{link}?{urlencode({'acting_for': acting_for})}" if acting_for else link


def deadline_text(approval: Approval) -> str:
    if approval.expires_at is None:
        return "no deadline"
    return approval.expires_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def calls_of(approval: Approval) -> list[tuple[str, str]]:
    """(tool name, arguments truncated to ARGUMENT_CHARS) of each pending call, in order, each on one line.

    Both are the engine's text: a line break in either (a name stored before the API refused them,
    JSON's whitespace between values) is shown escaped, never as a line of the message (display.py).
    """
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
        name = display.escaped(str(call.get("name", "?")))
        out.append((name, truncate(display.escaped(arguments), ARGUMENT_CHARS)))
    return out


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(
    approval: Approval,
    *,
    kind: str = "request",
    links: dict[str, str] | None = None,
    lead: str | None = None,
    acting_for: str = "",
) -> tuple[str, str, str]:
    """(subject, plain text, HTML) of the approver email; the HTML escapes every value.

    With `links` (an approver's own email) the Approve and Deny links come first: each opens a
    confirmation page, nothing is decided by opening it.
    """
    calls = calls_of(approval)
    agent = display.escaped(approval.agent_id or "an agent")
    tools = ", ".join(dict.fromkeys(name for name, _ in calls)) or "a tool"
    # A header may not hold a line break: agent ids and tool names are the engine's text.
    subject = " ".join(f"{PREFIXES[kind]}Approval needed: {agent} wants to call {tools}".split())
    subject = truncate(subject, SUBJECT_CHARS)
    deadline, link = deadline_text(approval), console_link(approval, acting_for)
    lead = lead or LEADS[kind]
    text_lines = [lead, "", f"Agent: {agent}", f"Scope: {display.escaped(approval.scope)}", "Calls:"]
    text_lines += [f"  {name}({arguments})" for name, arguments in calls]
    text_lines += ["", f"Deadline: {deadline}"]
    if links:
        text_lines += [f"Approve: {links['approve']}", f"Deny: {links['deny']}", f"Open in the console: {link}", ""]
    else:
        text_lines += [f"Approve or deny: {link}", ""]
    html = format_html(
        "<p>{}</p><p>Agent: <b>{}</b><br>Scope: {}</p><p>Calls:</p><ul>{}</ul><p>Deadline: {}</p>{}",
        lead,
        agent,
        approval.scope,
        format_html_join("", "<li><code>{}</code>(<code>{}</code>)</li>", calls),
        deadline,
        _html_links(links, link),
    )
    return subject, "\n".join(text_lines), str(html)


def _html_links(links: dict[str, str] | None, console: str) -> str:
    if not links:
        return format_html('<p><a href="{}">Approve or deny</a></p>', console)
    return format_html(
        '<p><a href="{}"><b>Approve</b></a> &nbsp; <a href="{}"><b>Deny</b></a></p>'
        '<p>Each link opens a page that asks you to confirm. <a href="{}">Open in the console</a></p>',
        links["approve"],
        links["deny"],
        console,
    )
