"""Who a Slack user is here (docs/notifications.md, "Who a Slack user is"): a person's Slack member id, linked once."""

from django.conf import settings
from django.db import models


class SlackIdentity(models.Model):
    """A user's Slack member id (`U0123ABC`), so a button press in Slack acts as that user.

    Linked by a superuser in the admin, or by the first press of someone whose
    Slack email matches their account's (users.info) and who may decide that
    approval. No scope: the grants stay the user's memberships, as in the console.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="slack_identity")
    # Unique by a constraint (one_identity_per_slack_user), not unique=True: no LIKE twin of the index.
    slack_user_id = models.CharField(max_length=32, help_text="The Slack member id, like U0123ABC.")
    # "email" when a press linked it by the Slack profile's address, else who linked it in the admin.
    linked_by = models.CharField(max_length=200, blank=True)
    linked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "Slack identities"
        constraints = [models.UniqueConstraint(fields=["slack_user_id"], name="one_identity_per_slack_user")]

    def __str__(self) -> str:
        return f"{self.slack_user_id} is {self.user}"


class SlackChannel(models.Model):
    """A Slack channel granted to a scope (docs/notifications.md, Granting a channel): routes may target it there.

    The service's bot token reaches every channel the bot was invited to,
    whichever tenant it belongs to: without a grant, an operator of one
    workspace could route its approvals into another's channel. Superusers
    grant and remove (Django admin, `manage.py slackchannel`); a `slack`
    route is accepted, and delivered, only while its channel is granted to
    its scope or a scope above it.
    """

    # Unique by a constraint (one_grant_per_slack_channel), not unique=True: no LIKE twin of the index.
    channel_id = models.CharField(max_length=64, help_text="The Slack channel id, like C0123ABC.")
    scope = models.CharField(max_length=192, help_text="workspace[/project[/team]]: routes at or below it may use it.")
    note = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel_id"], name="one_grant_per_slack_channel")]

    def __str__(self) -> str:
        return f"{self.channel_id} granted to {self.scope}"
