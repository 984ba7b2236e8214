"""Webhook endpoints in the console and the admin (docs/api.md, "7.8 Webhooks"; issue "Push, not poll"): operators only.

The console calls the same services as the API; every POST redirects, and a
secret is shown once, on the one-time page the POST redirects to: it never
travels in a cookie, a message, the session or an address.
"""

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from suspensions.models import DeliveryAttempt, OutboxEvent, WebhookEndpoint, WebhookMessage
from suspensions.principals import Principal
from suspensions.services import webhooks
from tests.helpers import member, snapshot

XSS = "<script>alert(1)</script>"
OPS = Principal(name="user:olga", grants=(("acme", frozenset({"operator"})),))


def browser(username, grants, **flags):
    c = Client()
    c.force_login(member(username, grants, is_staff=True, **flags))
    return c


@pytest.fixture
def olga(db):
    return browser("olga", {"acme": ["operator"], "acme/support": ["operator"]})


def endpoint(scope="acme", url="https://hooks.example.com/in", **fields):
    found, _ = webhooks.create_endpoint(principal=OPS, scope=scope, url=url, event_types=[], **fields)
    return found


def message(hook, status="failed"):
    now = timezone.now()
    event = OutboxEvent(type="run.finished", data={}, created_at=now, dispatched_at=now)
    event.stamp_scope(hook.scope)
    event.save()
    row = WebhookMessage(
        endpoint=hook, event_id=event.id, type=event.type, body="{}", status=status, attempts=1, next_attempt_at=now
    )
    row.created_at = now
    row.stamp_scope(hook.scope)
    row.save()
    DeliveryAttempt.objects.create(message=row, number=1, at=now, status_code=503, duration_ms=1234)
    return row


def page(c, url):
    response = c.get(url)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


# -- the nav and who may open the pages --------------------------------------------------------


def test_an_operator_sees_the_webhooks_entry_and_other_staff_do_not(olga, db):
    assert 'href="/console/webhooks/"' in page(olga, "/console/")
    approver = browser("alice", {"acme": ["approver", "auditor"]})
    assert 'href="/console/webhooks/"' not in page(approver, "/console/")


def test_a_staff_user_who_is_no_operator_is_refused_every_webhook_page_and_writes_nothing(db):
    hook = endpoint()
    row = message(hook)
    approver = browser("alice", {"acme": ["approver", "auditor"]})
    before = snapshot()
    for url in ("/console/webhooks/", "/console/webhooks/new", f"/console/webhooks/{hook.id}/"):
        assert approver.get(url).status_code == 403
    for url in (
        f"/console/webhooks/{hook.id}/disable",
        f"/console/webhooks/{hook.id}/test",
        f"/console/webhooks/{hook.id}/rotate-secret",
        f"/console/webhooks/{hook.id}/messages/{row.id}/redeliver",
        "/console/webhooks/new",
    ):
        assert approver.post(url, {"scope": "acme", "url": "https://x.example.com"}).status_code == 403
    assert snapshot() == before


def test_an_operator_of_another_scope_gets_not_found_and_writes_nothing(db):
    hook = endpoint()
    row = message(hook)
    globex = browser("gus", {"globex": ["operator"]})
    before = snapshot()
    assert globex.get(f"/console/webhooks/{hook.id}/").status_code == 404
    assert globex.post(f"/console/webhooks/{hook.id}/disable").status_code == 404
    assert globex.post(f"/console/webhooks/{hook.id}/messages/{row.id}/redeliver").status_code == 404
    assert "hooks.example.com" not in page(globex, "/console/webhooks/")
    assert snapshot() == before


def test_an_anonymous_visitor_is_sent_to_the_login(db):
    response = Client().get("/console/webhooks/")
    assert response.status_code == 302 and response["Location"].startswith("/console/login/")


# -- list, create, show ------------------------------------------------------------------------


def test_the_list_shows_the_operators_endpoints_with_their_status_and_escapes_them(olga):
    active = endpoint(description=XSS)
    disabled = endpoint("acme/support", url="http://10.0.0.5/hook")
    webhooks.disable_endpoint(principal=OPS, endpoint_id=disabled.id)
    message(active)
    html = page(olga, "/console/webhooks/")
    assert f"/console/webhooks/{active.id}/" in html and f"/console/webhooks/{disabled.id}/" in html
    assert "1 failed" in html and ">disabled<" in html and ">active<" in html
    assert XSS not in html and "&lt;script&gt;" in html


def test_creating_an_endpoint_shows_its_secret_once_and_never_again(olga):
    form = page(olga, "/console/webhooks/new")
    assert 'name="csrfmiddlewaretoken"' in form and '<option value="acme/support">' in form
    fields = {"scope": "acme/support", "url": "https://hooks.example.com/in", "event_types": ["run.closed"]}
    response = olga.post("/console/webhooks/new", {**fields, "format": "slack"})
    hook = WebhookEndpoint.objects.get()
    # Post/redirect/get: the POST answers with a redirect to the one-time page, whose reload creates nothing.
    assert response.status_code == 302 and response.url == f"/console/webhooks/{hook.id}/secret"
    # The session waiting for the one showing holds the endpoint and a digest, not the secret.
    assert olga.session["console.webhook_secret"]["endpoint"] == str(hook.id)
    assert hook.secret not in str(dict(olga.session))
    shown = olga.get(response.url)
    assert shown.status_code == 200 and hook.secret in shown.content.decode()
    assert "no-store" in shown["Cache-Control"]
    assert (hook.scope, hook.event_types, hook.format, hook.created_by) == (
        "acme/support",
        ["run.closed"],
        "slack",
        "user:olga",
    )
    # Not in a cookie, a message or any later page, the one-time page's reload included.
    assert hook.secret not in str(response.cookies) + str(shown.cookies)
    again = olga.get(response.url, follow=True)
    assert again.redirect_chain == [(f"/console/webhooks/{hook.id}/", 302)]
    assert hook.secret not in again.content.decode() and "shown once" in again.content.decode()
    for url in ("/console/webhooks/", f"/console/webhooks/{hook.id}/"):
        assert hook.secret not in page(olga, url)
    assert WebhookEndpoint.objects.count() == 1


def test_the_secret_page_shows_nothing_without_the_post_that_made_the_secret(olga):
    hook = endpoint()
    response = olga.get(f"/console/webhooks/{hook.id}/secret", follow=True)
    assert response.redirect_chain == [(f"/console/webhooks/{hook.id}/", 302)]
    assert hook.secret not in response.content.decode()


def test_a_secret_rotated_since_the_post_is_not_shown_by_its_stale_one_time_page(olga):
    hook = endpoint()
    shown_at = olga.post(f"/console/webhooks/{hook.id}/rotate-secret").url
    # Someone else rotates again before this operator's redirect is followed: their secret is not shown here.
    _, newer = webhooks.rotate_secret(principal=OPS, endpoint_id=hook.id)
    response = olga.get(shown_at, follow=True)
    assert newer not in response.content.decode() and "shown once" in response.content.decode()


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"url": "ftp://hooks.example.com/in"}, "error-url"),
        ({"url": "https://user:pw@hooks.example.com/in"}, "error-url"),
        ({"scope": "globex"}, "error-scope"),
        ({"event_types": ["run.exploded"]}, "error-event_types"),
    ],
)
def test_a_bad_endpoint_form_shows_the_error_next_to_its_field_and_writes_nothing(olga, fields, error):
    before = snapshot()
    response = olga.post(
        "/console/webhooks/new", {"scope": "acme", "url": "https://ok.example.com", "format": "standard", **fields}
    )
    assert response.status_code == 400
    assert f'id="{error}"' in response.content.decode()
    assert snapshot() == before


def test_the_endpoint_page_shows_messages_with_their_attempts_and_a_redeliver_button(olga):
    hook = endpoint()
    failed, pending = message(hook, "failed"), message(hook, "pending")
    html = page(olga, f"/console/webhooks/{hook.id}/")
    assert "HTTP 503" in html and "1234 ms" in html
    assert f"/console/webhooks/{hook.id}/messages/{failed.id}/redeliver" in html
    assert f"/console/webhooks/{hook.id}/messages/{pending.id}/redeliver" not in html
    assert html.count('name="csrfmiddlewaretoken"') >= 4


# -- changes: redirect after POST with a message -----------------------------------------------


def test_redelivering_a_failed_message_makes_it_pending_and_says_so(olga):
    hook = endpoint()
    row = message(hook, "failed")
    response = olga.post(f"/console/webhooks/{hook.id}/messages/{row.id}/redeliver", follow=True)
    assert response.redirect_chain == [(f"/console/webhooks/{hook.id}/", 302)]
    assert "queued for delivery again" in response.content.decode()
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("pending", 1)


def test_disabling_and_enabling_from_the_endpoint_page(olga):
    hook = endpoint()
    off = olga.post(f"/console/webhooks/{hook.id}/disable", follow=True)
    assert "Disabled." in off.content.decode() and not WebhookEndpoint.objects.get().active
    assert 'id="endpoint-status">disabled<' in off.content.decode()
    on = olga.post(f"/console/webhooks/{hook.id}/enable", follow=True)
    assert "Enabled." in on.content.decode() and WebhookEndpoint.objects.get().active


def test_a_test_event_is_queued_from_the_endpoint_page(olga):
    hook = endpoint()
    response = olga.post(f"/console/webhooks/{hook.id}/test", follow=True)
    sent = WebhookMessage.objects.get()
    assert (sent.type, sent.status, sent.endpoint_id) == ("webhook.test", "pending", hook.id)
    assert f"queued as message {sent.id}" in response.content.decode()


def test_a_refused_test_is_a_message_not_an_error_page(olga):
    hook = endpoint()
    webhooks.disable_endpoint(principal=OPS, endpoint_id=hook.id)
    response = olga.post(f"/console/webhooks/{hook.id}/test", follow=True)
    assert response.status_code == 200 and "enable it before sending a test" in response.content.decode()
    assert not WebhookMessage.objects.exists()


def test_rotating_the_secret_shows_the_new_one_once(olga):
    hook = endpoint()
    response = olga.post(f"/console/webhooks/{hook.id}/rotate-secret")
    rotated = WebhookEndpoint.objects.get()
    assert response.status_code == 302 and response.url == f"/console/webhooks/{hook.id}/secret"
    assert rotated.secret in page(olga, response.url)
    assert rotated.previous_secret == hook.secret and rotated.secret not in page(olga, f"/console/webhooks/{hook.id}/")
    # The reload of the one-time page rotates nothing and shows nothing.
    assert rotated.secret not in olga.get(response.url, follow=True).content.decode()
    assert WebhookEndpoint.objects.get().secret == rotated.secret


def test_the_webhook_pages_answer_get_only_where_they_show_and_post_only_where_they_change(olga):
    hook = endpoint()
    assert olga.get(f"/console/webhooks/{hook.id}/disable").status_code == 405
    assert olga.post(f"/console/webhooks/{hook.id}/").status_code == 405


# -- the admin: superusers disable and enable through the services; staff only read -------------


def admin_change(row):
    opts = row._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(row.pk)])


def test_a_superuser_disables_an_endpoint_from_the_admin_and_a_staff_operator_cannot(db):
    hook = endpoint()
    changelist = reverse("admin:suspensions_webhookendpoint_changelist")
    staff = browser("otto", {"acme": ["operator"]})
    staff.post(changelist, {"action": "disable", "_selected_action": [str(hook.pk)]})
    assert WebhookEndpoint.objects.get().active
    root = browser("root", {}, is_superuser=True)
    root.post(changelist, {"action": "disable", "_selected_action": [str(hook.pk)]})
    assert (WebhookEndpoint.objects.get().active, WebhookEndpoint.objects.get().disabled_reason) == (
        False,
        "disabled by user:root",
    )
    assert root.get(changelist + "add/").status_code == 403


def test_the_admin_shows_a_message_with_its_attempts(db):
    row = message(endpoint())
    html = page(browser("ann", {"acme": ["auditor"]}), admin_change(row))
    assert "503" in html and "1234" in html


@pytest.mark.parametrize("rows", [1, 12])
def test_the_webhook_pages_cost_the_same_queries_at_any_number_of_messages(olga, rows, django_assert_max_num_queries):
    hook = endpoint()
    for _ in range(rows):
        message(hook)
    with django_assert_max_num_queries(8):
        page(olga, f"/console/webhooks/{hook.id}/")
    with django_assert_max_num_queries(7):
        page(olga, "/console/webhooks/")
