"""Notifications as deliveries (DESIGN §14, §21): approver emails and Slack messages, at least once.

Senders: one function per channel, `send(notification) -> None`, raising on
failure, called outside any transaction. The registry names them by dotted
path and imports them when a notification is sent: the Slack package
imports the decide service for its interactions, so importing it here would
be a cycle (services -> slack -> services).
"""

from collections.abc import Callable
from typing import Any

from django.utils.module_loading import import_string

from ..models import NotificationChannel

SENDERS: dict[str, str] = {
    NotificationChannel.EMAIL: "suspensions.notify.send",
    NotificationChannel.SLACK: "suspensions.slack.sender.send",
}


def sender_for(channel: str) -> Callable[[Any], None]:
    """The sender of `channel` (KeyError for a channel nobody sends)."""
    sender: Callable[[Any], None] = import_string(SENDERS[channel])
    return sender
