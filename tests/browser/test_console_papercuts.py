"""Issue 38's console papercuts, as a person sees them, in real Chromium at 1280 and 390 px.

Screenshots land in test-artifacts/console38-<what>-desktop|phone.png for a human to look at.
"""

from datetime import timedelta
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest
from django.db.models import F
from playwright.sync_api import expect

from suspensions import services, timefmt
from suspensions.models import Approval, Run, Suspension
from suspensions.principals import Principal
from tests.browser.conftest import PHONE, demo_inbox, logged_in, no_overflow, paused, shoot
from tests.helpers import member

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
VIEWPORTS = [(DESKTOP, "desktop"), (PHONE, "phone")]
OLGA = Principal(name="user:olga", grants=(("acme", frozenset({"approver"})),))
# Generated names with no place to break a line.
LONG_TOOL = "lookup_customer_billing_history_and_every_recent_refund_request_for_the_account_v2"
LONG_AGENT = "billing-agent-" + "0123456789abcdef" * 4

# Each element's right edge beyond its card's: a table wider than its card is clipped (overflow hidden or not).
BEYOND_CARD = """sel => [...document.querySelectorAll(sel)].map(el => {
  const card = el.closest(".card").getBoundingClientRect(), box = el.getBoundingClientRect();
  return Math.round(box.right - card.right);
})"""


def approve(s):
    version = services.Version(run_id=UUID(s["run_id"]), suspension_id=UUID(s["id"]), run_revision=s["run_revision"])
    services.decide(
        principal=OLGA, suspension_id=UUID(s["id"]), version=version, decision="approve", reason="", response=""
    )


@pytest.mark.parametrize("viewport, name", VIEWPORTS)
def test_the_dashboard_says_what_each_number_counts_and_splits_approved_pauses_from_waiting_ones(
    chromium, site, engine, viewport, name
):
    member("olga", {"acme": ["approver"]}, is_staff=True)
    waiting = paused(engine, "refund-agent", "send_refund", "{}", 1800)
    approved = paused(engine, "ops-agent", "restart_service", "{}", 1200)
    approve(approved)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    assert page.locator("#pauses-person .stat-value").inner_text() == "1"
    assert page.locator("#pauses-approved .stat-value").inner_text() == "1"
    assert "Approved, waiting for the engine" in page.locator("#pauses-approved").inner_text()
    assert "add up to the paused runs" in page.locator("#live-pauses").inner_text()
    # Expiring within the hour: the approved pause is labelled as waiting for its engine, and links to its run.
    expiring = page.locator(".card", has_text="Expiring within the hour")
    approved_row = expiring.locator(".list-row", has_text="ops-agent")
    assert "waiting for the engine" in approved_row.inner_text() and "approval" not in approved_row.inner_text()
    assert approved_row.locator("a").get_attribute("href") == f"/console/runs/{approved['run_id']}/"
    # The label stays clear of the countdown beside it, on a phone too.
    badge, countdown = approved_row.locator(".badge").bounding_box(), approved_row.locator(".countdown").bounding_box()
    assert badge["x"] + badge["width"] <= countdown["x"], (badge, countdown)
    waiting_row = expiring.locator(".list-row", has_text="refund-agent")
    assert waiting_row.locator("a").get_attribute("href") == f"/console/approvals/{waiting['id']}/"
    no_overflow(page)
    shoot(page, f"console38-dashboard-{name}")
    context.close()


@pytest.mark.parametrize("viewport, name", VIEWPORTS)
def test_the_inbox_fits_its_card_when_a_tool_name_is_long(chromium, site, engine, viewport, name):
    member("olga", {"acme": ["approver"]}, is_staff=True)
    demo_inbox(engine)
    paused(engine, "billing-agent", LONG_TOOL, '{"account": "ACME-000042"}', 900)
    paused(engine, LONG_AGENT, "lookup", '{"account": "ACME-000042"}', 1000)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    page.goto(f"{site}/console/approvals/")
    assert page.get_by_text(LONG_TOOL).is_visible() and page.get_by_text(LONG_AGENT).is_visible()
    # The table and every Review button end inside the card: nothing to scroll to, nothing clipped.
    beyond = page.evaluate(BEYOND_CARD, ".inbox-table, .inbox-table .button")
    assert all(px <= 0 for px in beyond), beyond
    no_overflow(page)
    shoot(page, f"console38-inbox-long-tool-{name}")
    context.close()


@pytest.mark.parametrize("viewport, name", VIEWPORTS)
def test_the_runs_page_finds_part_of_an_agent_name_and_a_run_by_its_id(chromium, site, engine, viewport, name):
    member("olga", {"acme": ["approver"]}, is_staff=True)
    infra = paused(engine, "infra-agent", "restart_service", "{}", 3600)
    refund = paused(engine, "refund-agent", "send_refund", "{}", 3600)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    page.goto(f"{site}/console/runs/")
    page.fill("input[name=agent_id]", "INFRA")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**agent_id=INFRA**")
    assert page.locator("tbody tr").count() == 1 and "infra-agent" in page.locator("tbody").inner_text()
    page.goto(f"{site}/console/runs/")
    page.fill("input[name=q]", refund["run_id"].upper())
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**q=**")
    assert page.locator("tbody tr").count() == 1 and "refund-agent" in page.locator("tbody").inner_text()
    assert infra["run_id"][-8:] not in page.locator("tbody").inner_text()
    no_overflow(page)
    shoot(page, f"console38-runs-by-id-{name}")
    context.close()


def new_york(moment) -> str:
    """What the page should say in New York: the server's format, in that zone."""
    local = moment.astimezone(ZoneInfo("America/New_York"))
    return f"{local.day} {local:%b %Y, %H:%M:%S} {local.tzname()}"


@pytest.mark.parametrize("viewport, name", VIEWPORTS)
def test_times_show_in_the_viewers_zone_beside_the_relative_time_and_in_utc_without_javascript(
    chromium, site, engine, viewport, name
):
    member("olga", {"acme": ["approver"]}, is_staff=True)
    s = paused(engine, "refund-agent", "send_refund", "{}", 3600)
    # A run created a minute ago: within a second of its creation the hint reads "just now", and a fast
    # machine loads the page that soon.
    Run.objects.filter(pk=s["run_id"]).update(created_at=F("created_at") - timedelta(minutes=1))
    created = Run.objects.get(pk=s["run_id"]).created_at
    blocked = []
    context, page = logged_in(chromium, site, "olga", viewport=viewport, timezone_id="America/New_York")
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"{site}/console/runs/{s['run_id']}/")
    row = page.locator("dt:text-is('Created') + dd")
    moment = row.locator("time.moment")
    expect(moment).to_have_text(new_york(created))
    assert moment.get_attribute("title").startswith(timefmt.absolute(created))  # the UTC text, kept
    assert row.locator(".time-hint").inner_text() == "· 1 min ago"
    # A time inside the timeline's event data too: the pause's deadline.
    deadline = Suspension.objects.get(pk=s["id"]).expires_at
    expect(page.locator(".timeline dt:text-is('expires_at') + dd time.moment")).to_have_text(new_york(deadline))
    assert blocked == []
    no_overflow(page)
    shoot(page, f"console38-local-time-{name}")
    context.close()
    # Without JavaScript the server's UTC text stands, and the page still works.
    plain, page = logged_in(chromium, site, "olga", viewport=viewport, java_script_enabled=False)
    page.goto(f"{site}/console/runs/{s['run_id']}/")
    assert page.locator("dt:text-is('Created') + dd time").inner_text() == timefmt.absolute(created)
    plain.close()


@pytest.mark.parametrize("viewport, name", VIEWPORTS)
def test_the_sign_in_page_after_an_expired_session_says_the_decision_was_held_back(
    chromium, site, engine, viewport, name
):
    member("olga", {"acme": ["approver"]}, is_staff=True)
    s = paused(engine, "ops-agent", "delete_records", '{"table": "sessions"}', 600)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    page.goto(f"{site}/console/approvals/{s['id']}/")
    context.clear_cookies(name="sessionid")
    page.fill("#deny-form textarea[name=reason]", "Not during business hours.")
    page.click("#deny-form button[type=submit]")
    page.wait_for_url("**/console/login/?next=**")
    held = page.locator("#held-back")
    assert "Your denial was not sent" in held.inner_text() and "to send it again" in held.inner_text()
    no_overflow(page)
    shoot(page, f"console38-sign-in-held-back-{name}")
    page.fill("input[name=username]", "olga")
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")
    page.wait_for_url(f"{site}/console/approvals/{s['id']}/")
    # What the sign-in page promised: the approval, with the text back in its form, nothing decided.
    assert page.locator("#deny-form textarea[name=reason]").input_value() == "Not during business hours."
    context.close()
    assert Approval.objects.get(pk=s["id"]).status == "pending"
