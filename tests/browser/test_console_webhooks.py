"""Webhooks in the console, in real Chromium (issue "The approver's console, second pass", new pages).

An operator sees the scope's endpoints, one endpoint's recent deliveries with
their attempts and status, and redelivers a failed one, at desktop width and
on a phone.
"""

import pytest

from suspensions.models import MessageStatus, WebhookEndpoint, WebhookMessage
from tests.browser.conftest import PHONE, logged_in, no_overflow, shoot
from tests.console.test_webhooks_console import endpoint, message
from tests.helpers import member

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport, name", [(None, "desktop"), (PHONE, "phone")])
def test_an_operator_reads_a_failed_delivery_and_redelivers_it(chromium, site, viewport, name):
    member("olga", {"acme": ["operator"]}, is_staff=True)
    hook = endpoint(url="https://hooks.example.com/in", description="billing receiver")
    failed = message(hook, status=MessageStatus.FAILED)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    page.goto(f"{site}/console/webhooks/")
    page.get_by_text("https://hooks.example.com/in").first.click()
    page.wait_for_url(f"{site}/console/webhooks/{hook.id}/")
    row = page.locator(f"#message-{failed.id}")
    assert "failed" in row.inner_text() and "HTTP 503" in row.inner_text() and "1234 ms" in row.inner_text()
    no_overflow(page)
    shoot(page, f"console-webhook-deliveries-{name}")
    row.get_by_role("button", name="Redeliver").click()
    page.wait_for_selector(".messages .message")
    assert "pending" in page.locator(f"#message-{failed.id}").inner_text()
    no_overflow(page)
    context.close()
    assert WebhookMessage.objects.get(pk=failed.id).status == MessageStatus.PENDING


@pytest.mark.parametrize("viewport, name", [({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")])
def test_reloading_the_new_secret_page_creates_no_second_endpoint_and_shows_the_secret_no_more(
    chromium, site, viewport, name
):
    member("olga", {"acme": ["operator"]}, is_staff=True)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    page.goto(f"{site}/console/webhooks/new")
    page.fill("input[name=url]", "https://hooks.example.com/in")
    page.get_by_role("button", name="Create").click()
    page.wait_for_selector("#secret")
    hook = WebhookEndpoint.objects.get()
    assert page.url == f"{site}/console/webhooks/{hook.id}/secret"
    assert hook.secret in page.locator("#secret").inner_text()
    no_overflow(page)
    shoot(page, f"console-webhook-secret-{name}")
    # The reload asks for the one-time page again (a GET): no second endpoint, no secret, a word on why.
    page.reload()
    page.wait_for_url(f"{site}/console/webhooks/{hook.id}/")
    assert "shown once" in page.locator(".messages").inner_text()
    assert hook.secret not in page.content()
    no_overflow(page)
    shoot(page, f"console-webhook-secret-reloaded-{name}")
    context.close()
    assert WebhookEndpoint.objects.count() == 1
