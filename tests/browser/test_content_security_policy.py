"""Issue 32: the console, the admin and /api/docs/ carry a Content-Security-Policy and still work under it.

Chromium reports every blocked script, style or image on the page's console:
none may be reported on any of these pages.
"""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from suspensions.middleware import ContentSecurityPolicyMiddleware
from tests.browser.conftest import WAIT_MS, demo_inbox, logged_in
from tests.helpers import member

pytestmark = pytest.mark.browser


def watched(page):
    """The page's CSP reports (console messages and page errors) as they come."""
    blocked = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: blocked.append(str(e)))
    return blocked


def test_the_console_works_under_the_policy(chromium, site, engine):
    demo_inbox(engine)
    member("alice", {"acme": ["approver", "operator"]}, is_staff=True)
    context, page = logged_in(chromium, site, "alice")
    blocked = watched(page)
    for path in ("/console/", "/console/approvals/", "/console/runs/", "/console/uncertain/", "/console/webhooks/"):
        response = page.goto(f"{site}{path}")
        assert response.headers["content-security-policy"] == ContentSecurityPolicyMiddleware.POLICY
    page.goto(f"{site}/console/approvals/")
    page.locator("a[href*='/console/approvals/']").first.click()
    expect(page.locator("form textarea, form button").first).to_be_visible()
    context.close()
    assert blocked == []


def test_the_admin_and_the_api_docs_work_under_the_policy(chromium, site, db):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    context, page = logged_in(chromium, site, "root")
    blocked = watched(page)
    for path in ("/admin/", "/admin/suspensions/apitoken/", "/admin/suspensions/apitoken/add/"):
        response = page.goto(f"{site}{path}")
        assert response.headers["content-security-policy"] == ContentSecurityPolicyMiddleware.POLICY
    response = page.goto(f"{site}/api/docs/")
    assert "content-security-policy" in response.headers
    page.wait_for_selector(".opblock-tag", timeout=WAIT_MS)
    context.close()
    assert blocked == []
