"""The Slack sender of notifications (docs/notifications.md, "Slack"): what services.notifications calls for a `slack`
Notification.

Contract (shared with the email sender, suspensions.notify.send): called
from Celery outside any transaction with one claimed Notification; returns
None when the message is posted (REQUEST, ESCALATION: chat.postMessage,
keeping its `ts` in `notification.slack_ts` for the caller to record) or
updated (DECIDED: chat.update of every message posted about that approval
to that channel, showing the outcome and who decided, buttons removed);
raises on any failure, and the delivery retries on the webhooks' schedule.

A request posted after its approval was already decided shows the outcome
at once (no buttons): its DECIDED may have found nothing posted to update.
A DECIDED whose request is still waiting to be posted raises, so it is
retried after that message exists.
"""

from typing import Any

from ..models import Approval, ApprovalStatus, MessageStatus, Notification, NotificationChannel, NotificationKind, Run
from . import blocks
from .client import web_client

POSTED_KINDS = (NotificationKind.REQUEST, NotificationKind.ESCALATION, NotificationKind.REMINDER)


class NotPostedYet(Exception):
    """A DECIDED came before the message it updates was posted: the delivery tries again later."""


def send(notification: Any) -> None:
    """Post or update the Slack message of `notification`; raises on failure (SlackApiError, NotPostedYet)."""
    approval = Approval.objects.get(pk=notification.approval_id)
    if notification.kind == NotificationKind.DECIDED:
        update_messages(approval, channel=notification.recipient)
        return
    if notification.slack_ts:
        return  # posted by an earlier attempt whose outcome was recorded with its ts: never post twice
    if notification.acting_for:
        # A delegate's direct message (docs/identity.md, "Delegation"): no buttons, a press would act as the
        # delegate themselves; they decide in the console, for the person they stand in for.
        text = blocks.delegate_text(approval, notification.acting_for)
        answer = web_client().chat_postMessage(channel=notification.recipient, text=text)
        notification.slack_ts = str(answer["ts"])
        return
    if approval.status == ApprovalStatus.PENDING:
        message = blocks.request_message(approval, run_revision=_revision(approval), kind=notification.kind)
    else:
        message = blocks.decided_message(approval)
    answer = web_client().chat_postMessage(channel=notification.recipient, **message)
    notification.slack_ts = str(answer["ts"])


def update_messages(approval: Approval, *, channel: str) -> int:
    """chat.update every message posted about `approval` to `channel` with its current state; how many.

    Also what the interactions endpoint shows on a stale press. Raises
    NotPostedYet after the updates when a message is still to be posted.
    """
    posted = Notification.objects.filter(
        approval_id=approval.pk, channel=NotificationChannel.SLACK, recipient=channel, kind__in=POSTED_KINDS
    ).order_by("created_at")
    message = blocks.decided_message(approval)
    client, updated, waiting = web_client(), 0, False
    for row in posted:
        if row.slack_ts:
            client.chat_update(channel=channel, ts=row.slack_ts, **message)
            updated += 1
        elif row.status == MessageStatus.PENDING:
            waiting = True
    if waiting:
        raise NotPostedYet(f"a Slack message about approval {approval.pk} in {channel} is not posted yet")
    return updated


def _revision(approval: Approval) -> int:
    """The run's revision: while its approval is pending the run is paused at the version voters present."""
    revision = Run.objects.filter(pk=approval.run_id).values_list("revision", flat=True).first()
    if revision is None:
        raise LookupError(f"approval {approval.pk} has no run")
    return int(revision)
