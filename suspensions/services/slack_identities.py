"""Linking a Slack member to a user (docs/notifications.md, "Who a Slack user is"): written once, by the first press
that proves who it is."""

from django.db import IntegrityError, transaction

from ..models import SlackIdentity


def link_slack_user(*, user_id: int, slack_user_id: str) -> bool:
    """Link `slack_user_id` to the user, as found by the Slack profile's email; True when this call linked it.

    Called only for someone allowed to decide the approval they pressed on,
    after their decision went through: a press that is refused links nobody.
    A user already linked (or a Slack id already taken) keeps its link: two
    presses racing to link the same person both succeed, one of them writes.
    """
    try:
        with transaction.atomic():
            _, created = SlackIdentity.objects.get_or_create(
                user_id=user_id, defaults={"slack_user_id": slack_user_id, "linked_by": "email"}
            )
    except IntegrityError:
        return False  # the Slack id is linked to someone else (a superuser's fix in the admin stands)
    return created
