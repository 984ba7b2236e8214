"""Every console page in a real Chromium, at desktop width and on a 390 px phone
(docs/decisions.md, "The console's layout, accessibility, and its people"), and its accessibility.

Screenshots land in test-artifacts/console-<page>-desktop.png and -phone.png for a human to look at;
on the phone no page may scroll sideways, as a whole or inside (a table in a scrolling box).
"""

import json
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from suspensions import digests, services
from suspensions.models import ClosureReceipt, Start
from suspensions.principals import Principal
from suspensions.services import webhooks
from tests.browser.conftest import PHONE, WAIT_MS, demo_inbox, logged_in, no_overflow, shoot
from tests.closure_setup import OPERATOR, closure_request, started
from tests.helpers import member

pytestmark = pytest.mark.browser

OPS = Principal(name="user:olga", grants=(("acme", frozenset({"operator"})),))

# Elements that scroll sideways inside the page: a table a thumb must drag to reach its last column.
SIDEWAYS = """() => [...document.querySelectorAll("body *")]
  .filter(el => ["auto", "scroll"].includes(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth + 1)
  .map(el => el.tagName.toLowerCase() + "." + [...el.classList].join("."))"""

# The focused element's outline and its contrast with the nearest opaque background behind it (WCAG 1.4.11).
FOCUS_RING = """() => {
  const el = document.activeElement, style = getComputedStyle(el);
  const rgb = text => text.match(/[\\d.]+/g).map(Number);
  const linear = c => (c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  const lum = ([r, g, b]) => 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  let node = el.parentElement, back = [255, 255, 255];
  for (; node; node = node.parentElement) {
    const c = rgb(getComputedStyle(node).backgroundColor);
    if (c.length < 4 || c[3] > 0) { back = c; break; }
  }
  const [a, b] = [lum(rgb(style.outlineColor)), lum(back)].sort((x, y) => y - x);
  const contrast = (a + 0.05) / (b + 0.05);
  return {tag: el.tagName, style: style.outlineStyle, width: parseFloat(style.outlineWidth), contrast};
}"""


def console_world(engine) -> dict[str, str]:
    """One of everything the console shows, as {page name: path}."""
    member("olga", {"acme": ["approver", "operator", "auditor"]}, is_staff=True)
    approvals = demo_inbox(engine)
    uncertain = started()
    # Older than UNCERTAIN_AFTER_SECONDS, so the default list shows it.
    Start.objects.filter(run_id=uncertain.run.id).update(started_at=timezone.now() - timedelta(hours=2))
    closed = started()
    services.close_run(principal=OPERATOR, run_id=closed.run.id, request=closure_request(closed))
    receipt = ClosureReceipt.objects.get(run_id=closed.run.id)
    hook, _ = webhooks.create_endpoint(
        principal=OPS,
        scope="acme",
        url="https://hooks.example.com/suspensions/a-rather-long-path/that-keeps-going/in",
        event_types=[],
        description="the on-call channel's receiver",
    )
    webhooks.send_test(principal=OPS, endpoint_id=hook.id)
    return {
        "dashboard": "/console/",
        "inbox": "/console/approvals/",
        "approval": f"/console/approvals/{approvals[0]['id']}/",
        "run": f"/console/runs/{closed.run.id}/",
        "runs": "/console/runs/",
        "uncertain": "/console/uncertain/",
        "closure-form": f"/console/runs/{uncertain.run.id}/close",
        "closure-receipt": f"/console/runs/{closed.run.id}/closures/{receipt.suspension_id}/",
        "webhooks": "/console/webhooks/",
        "webhook": f"/console/webhooks/{hook.id}/",
        "webhook-new": "/console/webhooks/new",
    }


def failed_responses(page) -> list[str]:
    """Every response of 400 or more the page gets from now on (a missing favicon, script or style)."""
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return failed


def test_every_console_page_fits_a_phone_and_is_photographed_at_both_widths(chromium, site, engine):
    pages = console_world(engine)
    for viewport, suffix in (({"width": 1360, "height": 900}, "desktop"), (PHONE, "phone")):
        context, page = logged_in(chromium, site, "olga", viewport=viewport)
        failed = failed_responses(page)
        for name, path in pages.items():
            page.goto(f"{site}{path}")
            shoot(page, f"console-{name}-{suffix}")
            no_overflow(page)
            assert page.evaluate(SIDEWAYS) == [], f"{name} scrolls sideways at {suffix} width"
        context.close()
        assert failed == []


def test_the_login_page_fits_a_phone_and_is_photographed_at_both_widths(chromium, site):
    for viewport, suffix in (({"width": 1360, "height": 900}, "desktop"), (PHONE, "phone")):
        context = chromium.new_context(viewport=viewport)
        page = context.new_page()
        failed = failed_responses(page)
        page.goto(f"{site}/console/login/")
        shoot(page, f"console-login-{suffix}")
        no_overflow(page)
        context.close()
        assert failed == []


def test_on_a_phone_the_decision_comes_after_the_calls_and_before_the_conversation(chromium, site, engine):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    s = demo_inbox(engine)[0]
    boxes = {}
    for viewport, width in (({"width": 1360, "height": 900}, "desktop"), (PHONE, "phone")):
        context, page = logged_in(chromium, site, "alice", viewport=viewport)
        page.goto(f"{site}/console/approvals/{s['id']}/")
        cards = {
            "calls": page.locator("section.card", has=page.locator("h2", has_text="Pending tool call")),
            "decision": page.locator(".decision-card"),
            "conversation": page.locator("section.card", has=page.locator("h2", has_text="Conversation")),
        }
        boxes[width] = {name: card.bounding_box() for name, card in cards.items()}
        context.close()
    desktop, phone = boxes["desktop"], boxes["phone"]
    assert desktop["decision"]["x"] > desktop["conversation"]["x"] + desktop["conversation"]["width"] - 1
    assert phone["calls"]["y"] < phone["decision"]["y"] < phone["conversation"]["y"]


def test_on_a_phone_the_uncertain_starts_show_their_digests_and_close_buttons(chromium, site):
    member("olga", {"acme": ["operator"]}, is_staff=True)
    claimed = started()
    Start.objects.filter(run_id=claimed.run.id).update(started_at=timezone.now() - timedelta(hours=2))
    context, page = logged_in(chromium, site, "olga", viewport=PHONE)
    page.goto(f"{site}/console/uncertain/")
    row = page.locator(f"#uncertain-{claimed.run.id}")
    for part in (row.locator(".digest").first, row.locator(".digest").last, page.locator(f"#close-{claimed.run.id} a")):
        box = part.bounding_box()
        assert box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    expect(row.locator(".digest").last).to_have_text(claimed.start.digest)
    context.close()


def test_a_keyboard_user_skips_to_the_content_and_always_sees_a_clear_focus_ring(chromium, site, engine):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    context, page = logged_in(chromium, site, "alice")
    page.goto(f"{site}/console/runs/")
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    rings = [page.evaluate(FOCUS_RING)]
    page.keyboard.press("Enter")
    expect(page.locator(":focus")).to_have_id("content")
    page.keyboard.press("Shift+Tab")  # back into the dark sidebar: the last nav control, Sign out
    rings.append(page.evaluate(FOCUS_RING))
    page.focus("input[name=scope]")
    rings.append(page.evaluate(FOCUS_RING))
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Filter")
    rings.append(page.evaluate(FOCUS_RING))
    context.close()
    assert [r["tag"] for r in rings] == ["A", "BUTTON", "INPUT", "BUTTON"]
    for ring in rings:
        assert ring["style"] != "none" and ring["width"] >= 2 and ring["contrast"] >= 3, ring


def test_the_active_page_is_marked_in_the_nav_and_messages_are_announced(chromium, site, engine):
    member("olga", {"acme": ["operator"]}, is_staff=True)
    hook, _ = webhooks.create_endpoint(principal=OPS, scope="acme", url="https://hooks.example.com/in", event_types=[])
    context, page = logged_in(chromium, site, "olga")
    page.goto(f"{site}/console/webhooks/{hook.id}/")
    current = page.locator("nav.nav [aria-current=page]")
    expect(current).to_have_count(1)
    expect(current).to_have_text("Webhooks")
    page.click("text=Send test event")
    live = page.locator(".messages[role=status][aria-live=polite]")
    expect(live).to_contain_text("Test event queued")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    response = page.request.get(f"{site}{icon}")
    context.close()
    assert response.status == 200 and response.headers["content-type"].startswith("image/svg+xml")


def test_the_closure_form_shows_and_reads_times_in_the_browsers_time_zone(chromium, site):
    member("olga", {"acme": ["operator"]}, is_staff=True)
    claimed = started()
    context, page = logged_in(chromium, site, "olga", timezone_id="Europe/Berlin")
    page.goto(f"{site}/console/runs/{claimed.run.id}/close")
    expect(page.locator("select[name=time_zone]")).to_have_value("Europe/Berlin", timeout=WAIT_MS)
    shown = page.locator("input[name=observed_at]").input_value()
    page.fill("input[name=issuer]", "cluster-controller")
    page.fill("input[name=issuer_revision]", "rev-7")
    page.fill("input[name=proof_ref]", "pods/agent-7/terminated")
    page.fill("input[name=proof_digest]", "AB" * 32)
    page.click("#closure-form button[type=submit]")
    expect(page.locator("#receipt-integrity")).to_contain_text("Integrity check passed")
    context.close()
    request = json.loads(ClosureReceipt.objects.get().request)
    observed = datetime.fromisoformat(shown).replace(tzinfo=ZoneInfo("Europe/Berlin"))
    assert request["observed_at"] == digests.rfc3339(observed)
    assert request["proof_digest"] == "ab" * 32
