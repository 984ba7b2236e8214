"""`manage.py slackchannel add|remove|list`: grant Slack channels to scopes (docs/notifications.md), like the admin."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import scopes
from ...models import SlackChannel
from ...services.notification_routes import SLACK_CHANNEL


class Command(BaseCommand):
    help = "Grant a Slack channel to a scope (its routes may post there), remove a grant, or list the grants."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="grant CHANNEL to SCOPE")
        add.add_argument("channel")
        add.add_argument("scope")
        add.add_argument("--note", default="")
        remove = actions.add_parser("remove", help="remove CHANNEL's grant: its routes stop posting")
        remove.add_argument("channel")
        actions.add_parser("list", help="every grant")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "add":
            self.add(options["channel"], options["scope"], options["note"])
        elif action == "remove":
            deleted, _ = SlackChannel.objects.filter(channel_id=options["channel"]).delete()
            if not deleted:
                raise CommandError(f"Slack channel {options['channel']} is not granted")
            self.stdout.write(f"removed the grant of {options['channel']}")
        else:
            for grant in SlackChannel.objects.order_by("scope", "channel_id"):
                self.stdout.write(f"{grant.channel_id}\t{grant.scope}\t{grant.note}")

    def add(self, channel: str, scope: str, note: str) -> None:
        if not SLACK_CHANNEL.fullmatch(channel):
            raise CommandError(f"not a Slack channel id (like C0123ABC): {channel!r}")
        if not scopes.is_valid(scope):
            raise CommandError(f"not a valid scope: {scope!r}")
        held = SlackChannel.objects.filter(channel_id=channel).first()
        if held is not None:
            raise CommandError(f"Slack channel {channel} is already granted to {held.scope}: remove that grant first")
        SlackChannel.objects.create(channel_id=channel, scope=scope, note=note)
        self.stdout.write(f"granted {channel} to {scope}")
