"""The console in a real headless Chromium (Debian's), driven by Playwright against the live server.

Screenshots land in test-artifacts/ (gitignored) for a human to look at.
"""

import pytest

from suspensions.models import Admission, Run
from tests.browser.conftest import ARTIFACTS, demo_inbox, logged_in, paused
from tests.helpers import member

pytestmark = pytest.mark.browser


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
    page.wait_for_url(f"{site}/console/approvals/{target['id']}/?tool=send_refund")  # the filter travels along
    assert "A-1077" in page.locator("pre.code").first.inner_text()
    page.screenshot(path=str(ARTIFACTS / "console-approval.png"), full_page=True)

    page.fill("#approve-form textarea[name=reason]", "Small amount, customer verified.")
    page.click("#approve-form button[type=submit]")
    # On to the next approval of the same filter: the other refund.
    page.wait_for_url(f"{site}/console/approvals/{made[0]['id']}/?tool=send_refund")
    page.goto(f"{site}/console/runs/{target['run_id']}/")
    assert page.locator("#run-state").inner_text() == "running"
    assert "user:alice" in page.locator("#admissions").inner_text()
    page.screenshot(path=str(ARTIFACTS / "console-run.png"), full_page=True)
    page.goto(f"{site}/console/")
    page.screenshot(path=str(ARTIFACTS / "console-dashboard.png"), full_page=True)
    context.close()
    assert Admission.objects.get(suspension_id=target["id"]).actor == "user:alice"


def test_an_approver_denies_with_a_reason_and_the_run_fails(chromium, site, engine):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    s = paused(engine, "ops-agent", "delete_records", '{"table": "sessions"}', 600)
    context, page = logged_in(chromium, site, "alice")
    page.goto(f"{site}/console/approvals/{s['id']}/")
    page.fill("#deny-form textarea[name=reason]", "Never delete sessions during business hours.")
    page.click("#deny-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/")  # none left: back to the inbox
    assert "Never delete sessions during business hours." in page.locator(".message-success").inner_text()
    page.goto(f"{site}/console/runs/{s['run_id']}/")
    assert page.locator("#run-state").inner_text() == "failed"
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
