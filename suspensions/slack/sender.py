"""The Slack sender of notifications (DESIGN §21): what services.notifications calls for a `slack` Notification.

Contract (shared with the email sender, suspensions.notify.send): called
from Celery outside any transaction with one claimed Notification; returns
None when the message is posted (REQUEST: chat.postMessage, keeping its `ts`
in `notification.slack_ts` for the caller to record) or updated (DECIDED:
chat.update of the REQUEST's message); raises on any failure, and the
delivery retries on the webhooks' schedule.
"""

from typing import Any


def send(notification: Any) -> None:
    """Post or update the Slack message of `notification`; raises on failure. Not built yet: always fails."""
    raise NotImplementedError("Slack sending is not built yet")
