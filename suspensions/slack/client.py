"""The Slack Web API client (slack_sdk), pointed at SLACK_API_URL, and whether Slack is on at all."""

from django.conf import settings
from slack_sdk import WebClient

from ..services.notifications import slack_configured

# Seconds per Web API call. The interactions endpoint calls Slack too (a modal, an ephemeral answer), and
# Slack wants its answer within 3 s; a sender's call is bounded so a slow Slack never holds a worker long.
TIMEOUT = 2


def enabled() -> bool:
    """Slack approvals are on only with both the bot token (to post) and the signing secret (to trust presses)."""
    return slack_configured()


def web_client() -> WebClient:
    """A client for one task or request; it raises SlackApiError on any answer that is not `ok`."""
    return WebClient(token=settings.SLACK_BOT_TOKEN, base_url=settings.SLACK_API_URL, timeout=TIMEOUT)
