"""The Slack sender of notifications (DESIGN §21): what services.notifications calls for a `slack` Notification.

Contract (shared with the email sender, suspensions.notify.send): called
from Celery outside any transaction with one claimed Notification
(`recipient` is the channel id); returns None when the message is posted
(kind REQUEST or ESCALATION: chat.postMessage; set `notification.slack_ts`
to its `ts`, and the delivery records it) or updated (kind DECIDED:
chat.update of the message the REQUEST/ESCALATION row of the same approval
and channel posted; while that one has no `slack_ts` yet, raise, and the
update is tried again later); raises on any failure, and the delivery
retries on the webhooks' schedule.
"""

from typing import Any


def send(notification: Any) -> None:
    """Post or update the Slack message of `notification`; raises on failure. Not built yet: always fails."""
    raise NotImplementedError("Slack sending is not built yet")
