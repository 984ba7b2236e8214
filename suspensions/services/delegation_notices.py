"""Telling a delegate that a delegation started (docs/identity.md, "Delegation"): by email, and by a Slack direct
message where their Slack identity is linked.

A delegation that starts at once is announced by a task enqueued on its
commit; one that starts later, or whose task was lost, by the beat
(`announce_delegations` without ids). Each row is claimed by a
compare-and-swap on `notified_at` before anything is sent, so two workers
never both send it; a failed email hands the row back (`notified_at` null)
for the next beat. The Slack message is a courtesy beside the email: its
failure is logged, never retried.
"""

import logging
from collections.abc import Sequence
from uuid import UUID

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.utils.module_loading import import_string

from ..clock import db_now
from ..models import Delegation, SlackIdentity
from .delegations import active
from .notifications import slack_configured

log = logging.getLogger("suspensions.delegations")

# Delegations announced per beat at most: the next beat goes on.
BATCH = 50


def announce(ids: Sequence[UUID | str] | None = None) -> int:
    """Announce the started, still active, unannounced delegations (`ids`, or any); how many were told."""
    now = db_now()
    due = Delegation.objects.filter(active(now), notified_at__isnull=True)
    if ids is not None:
        due = due.filter(pk__in=list(ids))
    told = 0
    for row in due.select_related("from_user", "to_user").order_by("starts_at", "id")[:BATCH]:
        # The claim: only the worker whose update found the row unannounced sends it.
        if Delegation.objects.filter(pk=row.pk, notified_at__isnull=True).update(notified_at=now) != 1:
            continue
        try:
            send(row)
        except Exception:
            Delegation.objects.filter(pk=row.pk).update(notified_at=None)
            log.exception("delegation %s: the delegate's email failed; the next beat tries again", row.pk)
            continue
        told += 1
    return told


def words(row: Delegation) -> tuple[str, str]:
    """The subject and text of a delegate's notice."""
    giver, until = row.from_user.get_username(), row.ends_at.strftime("%Y-%m-%d %H:%M UTC")
    subject = f"You decide for {giver} in {row.scope} until {until}"
    lines = [
        f"{giver} is away and named you their delegate in {row.scope} (and every scope under it) until {until}.",
        f"Reason: {row.reason}" if row.reason else "",
        "Approvals that wait for them are sent to you too; open one and choose to decide for them.",
        f"What waits for them now: {settings.CONSOLE_BASE_URL}/console/away/",
    ]
    return subject, "\n".join(line for line in lines if line)


def send(row: Delegation) -> None:
    subject, text = words(row)
    if row.to_user.email:
        message = EmailMessage(subject, text, settings.DEFAULT_FROM_EMAIL, [row.to_user.email])
        if get_connection(fail_silently=False).send_messages([message]) != 1:
            raise RuntimeError("the mail backend sent nothing")
    slack_id = SlackIdentity.objects.filter(user_id=row.to_user_id).values_list("slack_user_id", flat=True).first()
    if slack_id and slack_configured():
        try:
            # By name, as services.notifications names its senders: the Slack package imports services.
            web_client = import_string("suspensions.slack.client.web_client")
            web_client().chat_postMessage(channel=slack_id, text=text)
        except Exception:
            log.exception("delegation %s: the Slack message to the delegate failed", row.pk)
