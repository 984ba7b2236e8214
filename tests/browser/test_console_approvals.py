"""The approver's console in a real Chromium, second pass (docs/decisions.md, "The approver's flow in the console").

Filters by part of a name, the next approval after a decision, a decision whose session
ended, a keyboard-only decision, long arguments that must wrap, and decided pages.
Screenshots: test-artifacts/approvals-<page>-desktop.png and -phone.png.
"""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from suspensions import services
from suspensions.models import Admission, Approval, Run
from tests.browser.conftest import PHONE, demo_inbox, logged_in, no_overflow, paused, shoot
from tests.helpers import member, snapshot

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
# A value with no break opportunity: a signed URL and a base64 blob, as tools receive them.
LONG_URL = "https://files.example.com/exports/" + "a1B2c3D4e5" * 40 + "?signature=" + "Zx9" * 80
BLOB = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" * 30


@pytest.fixture
def alice(db):
    return member("alice", {"acme": ["approver"]}, is_staff=True)


def sign_in_again(page, site):
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")


def test_the_inbox_finds_part_of_a_name_in_any_case_and_counts_what_it_found(chromium, site, engine, alice):
    demo_inbox(engine)
    for viewport, suffix in ((DESKTOP, "desktop"), (PHONE, "phone")):
        context, page = logged_in(chromium, site, "alice", viewport=viewport)
        page.goto(f"{site}/console/approvals/")
        assert page.locator("#result-count").inner_text() == "4 pending approvals."
        page.fill("input[name=tool]", "REFUND")
        page.click("form.filters button[type=submit]")
        page.wait_for_url("**/console/approvals/?*tool=REFUND*")
        assert page.locator("tr[data-approval]").count() == 2
        assert page.locator("#result-count").inner_text() == "2 pending approvals match these filters."
        # Every option of every filter select fits its box: no "Expiring within 1" cut short.
        cut = page.evaluate(
            """() => [...document.querySelectorAll('form.filters select')].flatMap(select => {
                const style = getComputedStyle(select), ctx = document.createElement('canvas').getContext('2d');
                ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
                const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
                return [...select.options].filter(o => ctx.measureText(o.text).width > room).map(o => o.text);
            })"""
        )
        assert cut == [], cut
        no_overflow(page)
        shoot(page, f"approvals-inbox-{suffix}")
        context.close()


def test_a_filter_that_does_not_parse_shows_its_error_and_no_row(chromium, site, engine, alice):
    demo_inbox(engine)
    context, page = logged_in(chromium, site, "alice")
    page.goto(f"{site}/console/approvals/?older_than=soon")
    assert "older_than" in page.locator(".notice-error").inner_text()
    assert page.locator("tr[data-approval]").count() == 0
    context.close()


def test_deciding_leads_to_the_next_approval_of_the_filter_then_back_to_its_inbox(chromium, site, engine, alice):
    made = demo_inbox(engine)
    later, sooner = made[0], made[1]  # the two refunds; made[1] has the sooner deadline
    context, page = logged_in(chromium, site, "alice")
    page.goto(f"{site}/console/approvals/?tool=refund")
    page.locator(f"tr[data-approval='{sooner['id']}'] a.row-link").click()
    page.wait_for_url(f"{site}/console/approvals/{sooner['id']}/?tool=refund")
    page.fill("#approve-form textarea[name=reason]", "Small amount, customer verified.")
    page.click("#approve-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/{later['id']}/?tool=refund")
    assert "Here is the next approval, by deadline." in page.locator(".messages").inner_text()
    assert "A-1042" in page.locator("#calls").inner_text()
    page.fill("#deny-form textarea[name=reason]", "Over the limit without a manager.")
    page.click("#deny-form button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/?tool=refund")
    assert "No other approval waits for you in this filter." in page.locator(".messages").inner_text()
    assert page.locator("tr[data-approval]").count() == 0
    context.close()
    assert Admission.objects.get(suspension_id=sooner["id"]).actor == "user:alice"
    assert Run.objects.get(pk=later["run_id"]).error == "rejected: Over the limit without a manager."


def test_a_decision_sent_after_the_session_ended_comes_back_unsent_after_signing_in(chromium, site, engine, alice):
    s = paused(engine, "ops-agent", "delete_records", '{"table": "sessions"}', 600)
    context, page = logged_in(chromium, site, "alice")
    page.goto(f"{site}/console/approvals/{s['id']}/?tool=delete")
    context.clear_cookies(name="sessionid")
    before = snapshot()
    page.fill("#deny-form textarea[name=reason]", "Not during business hours.")
    page.click("#deny-form button[type=submit]")
    page.wait_for_url("**/console/login/?next=**")
    sign_in_again(page, site)
    page.wait_for_url(f"{site}/console/approvals/{s['id']}/?tool=delete")
    assert "Your denial was not sent." in page.locator("#unsent").inner_text()
    assert page.locator("#deny-form textarea[name=reason]").input_value() == "Not during business hours."
    context.close()
    assert snapshot() == before
    assert Approval.objects.get(pk=s["id"]).status == "pending"


def test_an_approver_decides_with_the_keyboard_alone(chromium, site, engine, alice):
    s = paused(engine, "refund-agent", "send_refund", '{"amount": 45}', 600)
    context, page = logged_in(chromium, site, "alice")
    page.goto(f"{site}/console/approvals/{s['id']}/")
    note = page.locator("#approve-form textarea[name=reason]")
    for _ in range(60):
        page.keyboard.press("Tab")
        if note.evaluate("el => el === document.activeElement"):
            break
    page.keyboard.type("Checked with the customer.")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent").startswith("Approve 1 call")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{site}/console/approvals/")
    assert "Approved." in page.locator(".messages").inner_text()
    context.close()
    approval = Approval.objects.get(pk=s["id"])
    assert (approval.status, approval.decided_by, approval.note) == (
        "approved",
        "user:alice",
        "Checked with the customer.",
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_a_long_unbroken_argument_wraps_inside_the_approval_page(chromium, site, engine, alice, viewport):
    arguments = f'{{"url": "{LONG_URL}", "blob": "{BLOB}"}}'
    s = paused(engine, "export-agent", "upload_" + "x" * 120, arguments, 600)
    context, page = logged_in(chromium, site, "alice", viewport=viewport)
    page.goto(f"{site}/console/approvals/{s['id']}/")
    assert LONG_URL in page.locator("#calls pre").inner_text()
    no_overflow(page)
    page.goto(f"{site}/console/approvals/")
    no_overflow(page)
    context.close()


def test_decided_pages_keep_their_calls_and_stop_counting_down(chromium, site, engine, alice):
    pending = paused(engine, "refund-agent", "send_refund", '{"order": "A-1042", "amount": 900}', 3000)
    denied = paused(engine, "ops-agent", "delete_vpc", '{"vpc": "vpc-0a1b2c"}', 600)
    expired = paused(engine, "ops-agent", "restart_service", '{"service": "billing-api"}', 60)
    services.expire_suspensions(now=timezone.now() + timedelta(minutes=5))
    for viewport, suffix in ((DESKTOP, "desktop"), (PHONE, "phone")):
        context, page = logged_in(chromium, site, "alice", viewport=viewport)
        page.goto(f"{site}/console/approvals/{pending['id']}/")
        assert page.locator("time[data-deadline]").count() == 1
        no_overflow(page)
        shoot(page, f"approvals-pending-{suffix}")
        if suffix == "desktop":
            page.goto(f"{site}/console/approvals/{denied['id']}/")
            page.fill("#deny-form textarea[name=reason]", "Never delete a VPC from chat.")
            page.click("#deny-form button[type=submit]")
            page.wait_for_selector(".messages")
        page.goto(f"{site}/console/approvals/{denied['id']}/")
        assert "vpc-0a1b2c" in page.locator("#calls").inner_text()
        assert page.locator("time[data-deadline]").count() == 0
        no_overflow(page)
        shoot(page, f"approvals-decided-{suffix}")
        page.goto(f"{site}/console/runs/{expired['run_id']}/")
        error = page.locator(".notice-denied").inner_text()
        assert re.search(r"by its deadline \d{1,2} [A-Z][a-z]{2} \d{4}, [\d:]{8} UTC", error), error
        no_overflow(page)
        shoot(page, f"approvals-run-{suffix}")
        context.close()
