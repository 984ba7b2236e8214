"""What a press is told after its answer (docs/notifications.md, Slack): sent from Celery, never by the request.

Slack wants the interaction's answer within 3 s, so the request waits on at
most one Slack call (client.interactive_client). The presser's ephemeral
answer and the edit of an out-of-date message are enqueued once the request's
work has committed and sent by a worker (client.web_client, tried again by the
task on a failed connection). Both read nothing the request holds: the edit
shows the approval as it is when the worker sends it.
"""

from typing import Any

from celery import current_app
from django.db import transaction

from ..models import Approval, ApprovalStatus
from . import blocks
from .client import web_client

# Enqueued by name: the tasks module sits above this package (.importlinter).
EPHEMERAL_TASK = "suspensions.tasks.slack_ephemeral"
OUTCOME_TASK = "suspensions.tasks.slack_show_outcome"


def tell_later(channel: str, slack_user: str, text: str) -> None:
    """The presser's ephemeral answer, sent by a worker after the request (nothing without a channel)."""
    if channel:
        _enqueue(EPHEMERAL_TASK, channel, slack_user, text)


def show_outcome_later(approval_id: Any, channel: str, ts: str) -> None:
    """The edit of an out-of-date message to its approval's outcome, sent by a worker after the request."""
    if channel and ts:
        _enqueue(OUTCOME_TASK, str(approval_id), channel, ts)


def _enqueue(task: str, *args: str) -> None:
    def send() -> None:
        # A signature: sent by name like send_task, or run in process where the task is registered and eager.
        current_app.signature(task, args=list(args)).apply_async()

    # robust: a broker that is down loses a courtesy message, never the decision that committed.
    transaction.on_commit(send, robust=True)


def post_ephemeral(channel: str, slack_user: str, text: str) -> None:
    """chat.postEphemeral to `slack_user` in `channel`; raises on failure (the task decides to retry)."""
    web_client().chat_postEphemeral(channel=channel, user=slack_user, text=text)


def show_outcome(approval_id: str, channel: str, ts: str) -> None:
    """chat.update the message at (`channel`, `ts`) to its approval's outcome; nothing while it is still pending."""
    approval = Approval.objects.filter(pk=approval_id).first()
    if approval is None or approval.status == ApprovalStatus.PENDING:
        return
    web_client().chat_update(channel=channel, ts=ts, **blocks.decided_message(approval))
