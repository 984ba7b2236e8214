"""The Slack Web API client (slack_sdk), pointed at SLACK_API_URL, and whether Slack is on at all."""

from django.conf import settings
from slack_sdk import WebClient

from ..services.notifications import slack_configured

# Seconds per Web API call made from a Celery worker (a post, an edit, an ephemeral answer): a slow Slack
# never holds a worker long, and a failed call is retried by the worker, not by a person waiting.
TIMEOUT = 2
# Seconds for the one Slack call an interaction may wait on before it answers (users.info to find who
# pressed, or views.open for the deny dialog, whose trigger expires 3 s after the press). Slack wants the
# answer within 3 s: one call bounded to 1 s, with no retry, leaves the rest of the budget to the decision.
# (The bound is urllib's, per connect and per read; Slack answers whole or not at all.)
INTERACTIVE_TIMEOUT = 1
# The budget the interaction's one call must stay well inside (tests hold INTERACTIVE_TIMEOUT to it).
SLACK_ANSWER_BUDGET = 3.0


def enabled() -> bool:
    """Slack approvals are on only with both the bot token (to post) and the signing secret (to trust presses)."""
    return slack_configured()


def web_client() -> WebClient:
    """A client for one task; it raises SlackApiError on any answer that is not `ok`."""
    return WebClient(token=settings.SLACK_BOT_TOKEN, base_url=settings.SLACK_API_URL, timeout=TIMEOUT)


def interactive_client() -> WebClient:
    """The client of the one call an interaction makes before answering: short timeout, never retried.

    slack_sdk retries a failed connection once by default, which would double the wait: not here.
    """
    return WebClient(
        token=settings.SLACK_BOT_TOKEN,
        base_url=settings.SLACK_API_URL,
        timeout=INTERACTIVE_TIMEOUT,
        retry_handlers=[],
    )
