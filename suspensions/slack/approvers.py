"""Who pressed (docs/notifications.md, "Who a Slack user is"): the Slack member as a user of this service who may decide
the approval, or nobody.

A member linked in SlackIdentity is that user. An unlinked one is looked
up by the email of their Slack profile (users.info, which needs the
`users:read.email` scope) among active users with no link yet; exactly one
match counts, two are nobody (an address shared by accounts proves nothing).
Either way the user must hold `approver` over the approval's scope, through
the same memberships and staff flag as the console (principals.for_user).
"""

import logging
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from slack_sdk.errors import SlackClientError

from ..models import Approval, Role, SlackIdentity
from ..principals import Principal, for_user
from .client import interactive_client

log = logging.getLogger(__name__)


NOT_ALLOWED = (
    "You are not linked to an approver who may decide this approval. Ask an admin to link your Slack account, "
    "or use the console."
)
NOT_LINKED = (
    "Your Slack account is not linked to an approver who may decide this: the email of your Slack profile matches "
    "no single active approver here. To link it, use the same email in Slack as in your account here (the next "
    "press links you), or ask an admin to link Slack member {member} to you (admin, Slack identities). "
    "Meanwhile, decide in the console."
)


@dataclass(frozen=True)
class Approver:
    user_id: int
    principal: Principal
    # False: found by email; the press that goes through links them (services.slack_identities).
    linked: bool


def approver_for(slack_user_id: str, approval: Approval) -> Approver | None:
    """The user behind `slack_user_id` if they may decide `approval`; None for anyone else. Reads only."""
    identity = SlackIdentity.objects.select_related("user").filter(slack_user_id=slack_user_id).first()
    user = identity.user if identity is not None else _by_email(slack_user_id)
    if user is None or not user.is_active:
        return None
    principal = for_user(user)
    if not principal.can(Role.APPROVER, approval.scope):
        return None
    return Approver(user_id=user.pk, principal=principal, linked=identity is not None)


def refusal_for(slack_user_id: str) -> str:
    """What a refused presser is told: a linked member may not decide; an unlinked one, how to link. Reads only."""
    if SlackIdentity.objects.filter(slack_user_id=slack_user_id).exists():
        return NOT_ALLOWED
    return NOT_LINKED.format(member=slack_user_id[:32])


def known_not_allowed(slack_user_id: str, approval: Approval) -> bool:
    """True when the database alone shows the member may not decide (linked to someone who may not). Reads only.

    For the Deny button, whose press may make one Slack call and spends it
    on views.open: an unlinked member is looked up when the dialog is submitted.
    """
    identity = SlackIdentity.objects.select_related("user").filter(slack_user_id=slack_user_id).first()
    if identity is None:
        return False
    user = identity.user
    return not (user.is_active and for_user(user).can(Role.APPROVER, approval.scope))


def _by_email(slack_user_id: str) -> Any:
    # The one Slack call of the press that needs it, bounded (client.INTERACTIVE_TIMEOUT) and never retried.
    try:
        answer = interactive_client().users_info(user=slack_user_id)
    except (SlackClientError, OSError):
        # Slack down, or a member it does not know: not linked, and the press is answered as such.
        log.warning("users.info failed for a Slack member", exc_info=True)
        return None
    profile = (answer.get("user") or {}).get("profile") or {}
    email = str(profile.get("email") or "").strip()
    if not email:
        return None
    users = get_user_model().objects.filter(email__iexact=email, is_active=True, slack_identity__isnull=True)
    found = list(users[:2])
    return found[0] if len(found) == 1 else None
