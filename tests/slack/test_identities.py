"""Slack identities in the admin (docs/notifications.md, "Who a Slack user is"): superusers link a Slack member to a
user; nobody else sees them."""

import pytest
from django.test import Client

from suspensions.models import SlackIdentity
from tests.helpers import member

pytestmark = pytest.mark.django_db

ADD = "/admin/suspensions/slackidentity/add/"


def signed_in(user):
    c = Client()
    c.force_login(user)
    return c


def test_a_superuser_links_a_slack_member_to_a_user_in_the_admin():
    root = member("root", is_staff=True, is_superuser=True)
    alice = member("alice", {"acme": ["approver"]}, is_staff=True)

    response = signed_in(root).post(ADD, {"user": alice.pk, "slack_user_id": "UALICE"})

    assert response.status_code == 302
    identity = SlackIdentity.objects.get(slack_user_id="UALICE")
    assert (identity.user, identity.linked_by) == (alice, "user:root")


def test_a_staff_user_who_is_not_a_superuser_can_neither_see_nor_add_slack_identities():
    olga = member("olga", {"acme": ["operator", "approver"]}, is_staff=True)
    c = signed_in(olga)

    assert c.get("/admin/suspensions/slackidentity/").status_code == 403
    assert c.post(ADD, {"user": olga.pk, "slack_user_id": "UOLGA"}).status_code == 403
    assert not SlackIdentity.objects.exists()
