"""Deciding several approvals from the inbox in a real Chromium, at 1280 and 390 px (docs/console.md, "Deciding
several at once"): checkboxes and the keyboard (j/k/x/o/a/d), one reason for every denial, then each result.
Screenshots: test-artifacts/bulk-<step>-desktop.png and -phone.png.
"""

import pytest

from suspensions.models import Approval, Run
from tests.browser.conftest import PHONE, demo_inbox, logged_in, no_overflow, shoot
from tests.helpers import client, member, post, snapshot, version

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
VIEWPORTS = [pytest.param(DESKTOP, "desktop", id="desktop"), pytest.param(PHONE, "phone", id="phone")]


@pytest.fixture
def alice(db):
    return member("alice", {"acme": ["approver"]}, is_staff=True)


def current(page):
    return page.evaluate("() => document.querySelector('tr.is-current')?.dataset.approval || null")


def focused(page):
    return page.evaluate("() => [document.activeElement.tagName, document.activeElement.id || '']")


def inbox_order(page):
    return page.eval_on_selector_all("tbody tr[data-approval]", "rows => rows.map(r => r.dataset.approval)")


@pytest.mark.parametrize("viewport, suffix", VIEWPORTS)
def test_an_approver_denies_two_with_one_reason_using_the_keyboard_alone(
    chromium, site, engine, alice, viewport, suffix
):
    demo_inbox(engine)
    context, page = logged_in(chromium, site, "alice", viewport=viewport)
    page.goto(f"{site}/console/approvals/")
    assert page.locator("#shortcuts").is_visible()
    order = inbox_order(page)
    page.keyboard.press("j")
    assert current(page) == order[0] and focused(page)[0] == "A"
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert current(page) == order[1]
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("x")
    assert page.locator("#bulk-count").inner_text().startswith("2 selected.")
    assert page.locator("#bulk-deny").inner_text() == "Deny 2 selected"
    page.keyboard.press("d")
    assert focused(page) == ["TEXTAREA", ""]
    # Typing is never a shortcut: these letters land in the reason.
    page.keyboard.type("Duplicate requests, ask again tomorrow (j k a d x o).")
    assert page.locator("#bulk-count").inner_text().startswith("2 selected.")
    no_overflow(page)
    shoot(page, f"bulk-keyboard-{suffix}")
    page.keyboard.press("Tab")
    assert focused(page) == ["BUTTON", "bulk-deny"]
    page.keyboard.press("Enter")
    page.wait_for_selector("#bulk-results")
    results = page.locator("#bulk-results li.bulk-result")
    assert results.count() == 2
    assert [results.nth(i).get_attribute("data-result") for i in range(2)] == order[1:3]
    assert page.locator("#bulk-results .bulk-ok").count() == 2
    assert "Denied 2 of 2." in page.locator(".messages").inner_text()
    no_overflow(page)
    shoot(page, f"bulk-denied-{suffix}")
    context.close()
    errors = {Run.objects.get(pk=Approval.objects.get(pk=pk).run_id).error for pk in order[1:3]}
    assert errors == {"rejected: Duplicate requests, ask again tomorrow (j k a d x o)."}
    assert Approval.objects.filter(status="pending").count() == 2


@pytest.mark.parametrize("viewport, suffix", VIEWPORTS)
def test_an_approver_approves_several_with_checkboxes_and_sees_each_result(
    chromium, site, engine, alice, token, viewport, suffix
):
    made = demo_inbox(engine)
    taken = made[2]
    context, page = logged_in(chromium, site, "alice", viewport=viewport)
    page.goto(f"{site}/console/approvals/")
    assert page.locator("#bulk-approve").is_disabled()
    for s in made[:3]:
        page.check(f"#select-{s['id']}")
    assert page.locator("#bulk-approve").inner_text() == "Approve 3 selected"
    # Someone else denies one of them while this page is open.
    bob = client(token("acme", ["approver"], "bob"))
    denied = post(
        bob, f"/api/v1/approvals/{taken['id']}/decide", {"version": version(taken), "decision": "deny", "reason": "no"}
    )
    assert denied.status_code == 201
    no_overflow(page)
    shoot(page, f"bulk-selected-{suffix}")
    # `a` only moves to the button; Enter on it decides.
    page.keyboard.press("a")
    assert focused(page) == ["BUTTON", "bulk-approve"]
    assert page.locator("#bulk-count").inner_text() == "3 selected. Press Enter to approve them."
    page.keyboard.press("Enter")
    page.wait_for_selector("#bulk-results")
    texts = page.locator("#bulk-results .bulk-result-text").all_inner_texts()
    assert len(texts) == 3
    assert page.locator("#bulk-results .bulk-refused").count() == 1
    refused = page.locator(f"#bulk-results li[data-result='{taken['id']}']")
    assert "Refused" in refused.inner_text()
    assert "Approved 2 of 3." in page.locator(".messages").inner_text()
    no_overflow(page)
    shoot(page, f"bulk-approved-{suffix}")
    context.close()
    assert [Approval.objects.get(pk=s["id"]).status for s in made] == ["approved", "approved", "denied", "pending"]


def test_the_shortcuts_never_fire_while_typing_and_a_denial_without_reason_is_held_back(chromium, site, engine, alice):
    made = demo_inbox(engine)
    context, page = logged_in(chromium, site, "alice", viewport=DESKTOP)
    page.goto(f"{site}/console/approvals/")
    page.click("input[name=agent_id]")
    page.keyboard.type("jjxad")
    assert page.locator("input[name=agent_id]").input_value() == "jjxad"
    assert current(page) is None and page.locator("input[name=approval]:checked").count() == 0
    before = snapshot()
    page.check(f"#select-{made[0]['id']}")
    page.click("#bulk-deny")
    assert focused(page) == ["TEXTAREA", ""]
    assert page.locator("#bulk-count").inner_text() == "A denial needs a reason: type it, then deny."
    assert page.url == f"{site}/console/approvals/"
    # `o` opens the approval the keyboard is on.
    page.locator("textarea[name=reason]").press("Escape")
    page.keyboard.press("o")
    page.wait_for_url(f"{site}/console/approvals/{made[0]['id']}/")
    context.close()
    assert snapshot() == before
