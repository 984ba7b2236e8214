"""Slack channels granted to scopes (docs/notifications.md, Granting a channel): the command, the migration."""

import importlib

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command

from suspensions.clock import db_now
from suspensions.models import NotificationRoute, SlackChannel

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("suspensions.migrations.0020_slack_channel_grants")


def slack_route(scope, channel):
    route = NotificationRoute(kind="slack", target=channel, created_at=db_now())
    route.stamp_scope(scope)
    route.save(force_insert=True)


def test_the_migration_grants_a_channel_to_the_one_workspace_whose_routes_use_it_and_leaves_a_shared_one(caplog):
    slack_route("acme/support", "C0ACME")
    slack_route("acme", "C0ACME")
    slack_route("acme", "C0SHARED")
    slack_route("globex", "C0SHARED")

    MIGRATION.grant_existing_channels(apps, None)

    assert sorted(SlackChannel.objects.values_list("channel_id", "scope")) == [("C0ACME", "acme")]
    assert "C0SHARED is used by routes of 2 workspaces (acme, globex)" in caplog.text


def test_the_command_adds_lists_and_removes_a_grant(capsys):
    call_command("slackchannel", "add", "C0ACME", "acme", "--note", "support desk")
    call_command("slackchannel", "list")
    assert "C0ACME\tacme\tsupport desk" in capsys.readouterr().out

    call_command("slackchannel", "remove", "C0ACME")

    assert not SlackChannel.objects.exists()


@pytest.mark.parametrize(
    "argv", [["add", "#general", "acme"], ["add", "C0ACME", "Not A Scope"], ["remove", "C0NOBODY"]]
)
def test_the_command_refuses_a_bad_grant_and_writes_nothing(argv):
    with pytest.raises(CommandError):
        call_command("slackchannel", *argv)

    assert not SlackChannel.objects.exists()


def test_a_channel_granted_to_one_tenant_is_not_granted_again_to_another():
    call_command("slackchannel", "add", "C0ACME", "acme")

    with pytest.raises(CommandError, match="already granted to acme"):
        call_command("slackchannel", "add", "C0ACME", "globex")

    assert list(SlackChannel.objects.values_list("scope", flat=True)) == ["acme"]
