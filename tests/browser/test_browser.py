"""The console in a real headless Chromium (Debian's), driven by Playwright against the live server.

Screenshots land in test-artifacts/ (gitignored) for a human to look at.
"""

import os
from pathlib import Path

import pytest

from suspensions.models import Admission, Run
from tests.helpers import call, continuation, member, post, register

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WAIT_MS = 15_000


@pytest.fixture(scope="module")
def chromium():
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make browser)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def site(live_server, settings):
    # The live server speaks plain HTTP; secure-only cookies would never come back.
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    ARTIFACTS.mkdir(exist_ok=True)
    return live_server.url


def paused(engine, agent_id, tool, arguments, ttl, scope="acme", cont=None):
    run = register(engine, scope, agent_id=agent_id)
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": [call(name=tool, arguments=arguments)],
        "continuation": cont or continuation(),
        "ttl_seconds": ttl,
    }
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def demo_inbox(engine):
    rows = [
        ("refund-agent", "send_refund", '{"order": "A-1042", "amount": 900, "currency": "EUR"}', 86400),
        ("refund-agent", "send_refund", '{"order": "A-1077", "amount": 45, "currency": "EUR"}', 3000),
        ("ops-agent", "restart_service", '{"service": "billing-api", "region": "eu-west-1"}', 600),
        ("ops-agent", "delete_records", '{"table": "sessions", "older_than_days": 90}', 200),
    ]
    return [paused(engine, *row) for row in rows]


def logged_in(chromium, site, username, viewport=None):
    context = chromium.new_context(viewport=viewport or {"width": 1360, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(f"{site}/console/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")
    page.wait_for_url(f"{site}/console/")
    return context, page


def test_an_approver_filters_the_inbox_opens_an_approval_and_approves_it(chromium, site, engine):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    made = demo_inbox(engine)
    context, page = logged_in(chromium, site, "alice")
    page.goto(f"{site}/console/approvals/")
    assert page.locator("tr[data-approval]").count() == 4
    page.screenshot(path=str(ARTIFACTS / "console-inbox.png"), full_page=True)
    page.fill("input[name=tool]", "send_refund")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/console/approvals/?*tool=send_refund*")
    assert page.locator("tr[data-approval]").count() == 2

    target = made[1]  # the sooner refund sorts first
    page.locator(f"tr[data-approval='{target['id']}'] a.row-link").click()
    page.wait_for_url(f"{site}/console/approvals/{target['id']}/")
    assert "A-1077" in page.locator("pre.code").first.inner_text()
    page.screenshot(path=str(ARTIFACTS / "console-approval.png"), full_page=True)

    page.fill("#approve-form textarea[name=reason]", "Small amount, customer verified.")
    page.click("#approve-form button[type=submit]")
    page.wait_for_url(f"{site}/console/runs/{target['run_id']}/")
    assert page.locator("#run-state").inner_text() == "running"
    assert "user:alice" in page.locator("#admissions").inner_text()
    page.screenshot(path=str(ARTIFACTS / "console-run.png"), full_page=True)
    page.goto(f"{site}/console/")
    page.screenshot(path=str(ARTIFACTS / "console-dashboard.png"), full_page=True)
    context.close()
    assert Admission.objects.get(suspension_id=target["id"]).actor == "user:alice"


def test_an_approver_denies_with_a_reason_and_sees_the_run_failed(chromium, site, engine):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    s = paused(engine, "ops-agent", "delete_records", '{"table": "sessions"}', 600)
    context, page = logged_in(chromium, site, "alice")
    page.goto(f"{site}/console/approvals/{s['id']}/")
    page.fill("#deny-form textarea[name=reason]", "Never delete sessions during business hours.")
    page.click("#deny-form button[type=submit]")
    page.wait_for_url(f"{site}/console/runs/{s['run_id']}/")
    assert page.locator("#run-state").inner_text() == "failed"
    assert "Never delete sessions during business hours." in page.locator(".message-success").inner_text()
    context.close()
    assert Run.objects.get(pk=s["run_id"]).error == "rejected: Never delete sessions during business hours."


def test_two_approvers_submitting_at_once_get_one_winner_and_one_clear_loss(chromium, site, engine):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    member("bob", {"acme": ["approver"]}, is_staff=True)
    s = paused(engine, "refund-agent", "send_refund", '{"amount": 900}', 600)
    contexts, pages = zip(*(logged_in(chromium, site, name) for name in ("alice", "bob")), strict=True)
    for page in pages:
        page.goto(f"{site}/console/approvals/{s['id']}/")
    # Both pages are loaded; now both forms go out without waiting for each other.
    for page in pages:
        page.evaluate("document.getElementById('approve-form').requestSubmit()")
    for page in pages:
        page.wait_for_selector(".messages .message")
    said = sorted(page.locator(".messages").inner_text() for page in pages)
    assert said[0].startswith("Another approver already approved it.")
    assert said[1].startswith("Approved. The run is running at revision 3")
    for context in contexts:
        context.close()
    assert Admission.objects.filter(suspension_id=s["id"]).count() == 1


def test_the_inbox_reads_well_on_a_phone(chromium, site, engine):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    demo_inbox(engine)
    context, page = logged_in(chromium, site, "alice", viewport={"width": 390, "height": 844})
    page.goto(f"{site}/console/approvals/")
    assert page.locator("tr[data-approval]").count() == 4
    width = page.evaluate("document.documentElement.scrollWidth")
    page.screenshot(path=str(ARTIFACTS / "console-inbox-phone.png"), full_page=True)
    context.close()
    assert width <= 390
