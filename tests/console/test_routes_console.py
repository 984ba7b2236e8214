"""Notification routes in the console and the admin (docs/notifications.md, "Routes"): operators only; notifications
visible.

The console calls the same services as the API: a refused route is a form
error and writes nothing; every POST redirects.
"""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from suspensions.models import Notification, NotificationRoute
from tests.helpers import grant_channel, member, snapshot

pytestmark = pytest.mark.django_db

ROUTES = reverse("console:routes")


def browser(username, grants, **flags):
    c = Client()
    c.force_login(member(username, grants, is_staff=True, **flags))
    return c


def notification(status, scope="acme", recipient="alice@example.com"):
    now = timezone.now()
    n = Notification(
        approval_id="01a22e4f-351f-71a9-8405-e222bcbd535d",
        run_id="01a22e4f-351f-71a9-8405-e222bcbd535e",
        channel="email",
        kind="request",
        recipient=recipient,
        status=status,
        next_attempt_at=now,
        created_at=now,
    )
    n.stamp_scope(scope)
    n.save(force_insert=True)
    return n


def test_an_operator_creates_disables_enables_and_deletes_a_route():
    olga = browser("olga", {"acme": ["operator"]})
    page = olga.get(ROUTES)
    assert page.status_code == 200 and 'id="route-form"' in page.content.decode()

    made = olga.post(ROUTES, {"scope": "acme", "kind": "email", "target": "oncall@example.com"})
    assert made.status_code == 302
    route = NotificationRoute.objects.get()
    assert (route.scope, route.kind, route.target, route.created_by) == (
        "acme",
        "email",
        "oncall@example.com",
        "user:olga",
    )
    assert "oncall@example.com" in olga.get(ROUTES).content.decode()

    olga.post(reverse("console:route_disable", args=[route.pk]))
    assert NotificationRoute.objects.get().active is False
    olga.post(reverse("console:route_enable", args=[route.pk]))
    assert NotificationRoute.objects.get().active is True
    olga.post(reverse("console:route_delete", args=[route.pk]))
    assert not NotificationRoute.objects.exists()


def test_a_bad_target_is_a_form_error_and_writes_nothing():
    olga = browser("olga", {"acme": ["operator"]})
    before = snapshot()

    bad = olga.post(ROUTES, {"scope": "acme", "kind": "slack", "target": "#approvals"})

    assert bad.status_code == 400
    assert 'id="error-target"' in bad.content.decode()
    assert snapshot() == before


def test_a_slack_channel_granted_to_another_tenant_is_a_form_error_and_writes_nothing():
    olga = browser("olga", {"acme": ["operator"]})
    grant_channel("C0GLOBEX", "globex")
    before = snapshot()

    bad = olga.post(ROUTES, {"scope": "acme", "kind": "slack", "target": "C0GLOBEX"})

    assert bad.status_code == 400
    assert 'id="error-target"' in bad.content.decode()
    assert snapshot() == before


def test_the_page_counts_the_notifications_of_the_operators_scopes():
    olga = browser("olga", {"acme": ["operator"]})
    notification("failed")
    notification("delivered", recipient="bob@example.com")
    notification("failed", scope="globex", recipient="gus@example.com")

    page = olga.get(ROUTES).content.decode()

    assert "1 failed" in page and "1 delivered" in page and "0 pending" in page


def test_a_staff_user_who_is_no_operator_gets_the_403_page_and_cannot_change_a_route():
    route = NotificationRoute(kind="email", target="a@example.com", created_at=timezone.now())
    route.stamp_scope("acme")
    route.save(force_insert=True)
    ann = browser("ann", {"acme": ["approver"]})

    assert ann.get(ROUTES).status_code == 403
    assert ann.post(reverse("console:route_delete", args=[route.pk])).status_code == 403
    assert (
        browser("gus", {"globex": ["operator"]}).post(reverse("console:route_delete", args=[route.pk])).status_code
        == 404
    )
    assert NotificationRoute.objects.filter(pk=route.pk).exists()


def test_the_admin_lists_notifications_filtered_by_status_and_channel_and_adds_routes_through_the_service():
    root = Client()
    root.force_login(member("root", {}, is_staff=True, is_superuser=True))
    notification("failed")
    notification("delivered", recipient="bob@example.com")

    listed = root.get(
        reverse("admin:suspensions_notification_changelist") + "?status__exact=failed&channel__exact=email"
    )
    assert listed.status_code == 200
    page = listed.content.decode()
    assert "alice@example.com" in page and "bob@example.com" not in page

    before = snapshot()
    add = reverse("admin:suspensions_notificationroute_add")
    refused = root.post(add, {"scope": "acme", "kind": "email", "target": "nope", "description": ""})
    assert refused.status_code == 200 and "Not an email address" in refused.content.decode()
    assert snapshot() == before
    grant = grant_channel("C0123ABC", "globex")
    before = snapshot()
    elsewhere = root.post(add, {"scope": "acme", "kind": "slack", "target": "C0123ABC", "description": ""})
    assert elsewhere.status_code == 200 and "is granted to a scope other than" in elsewhere.content.decode()
    assert snapshot() == before
    grant.delete()
    made = root.post(add, {"scope": "acme", "kind": "slack", "target": "C0123ABC", "description": ""})
    assert made.status_code == 302
    assert NotificationRoute.objects.get().created_by == "user:root"
