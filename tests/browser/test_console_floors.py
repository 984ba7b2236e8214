"""Approval floors in the console, in real Chromium (issue 32 item 5): an operator sets one, at 1280 px and 390 px."""

import pytest

from suspensions.models import ApprovalFloor
from tests.browser.conftest import PHONE, logged_in, no_overflow, shoot
from tests.helpers import member

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport, name", [({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")])
def test_an_operator_sets_a_floor_and_reads_it_in_the_list(chromium, site, viewport, name):
    member("olga", {"acme": ["operator"], "acme/eu": ["operator"]}, is_staff=True)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    page.goto(f"{site}/console/approval-floors/new")
    no_overflow(page)
    page.select_option("select[name=scope]", "acme/eu")
    page.select_option("select[name=quorum]", "2")
    page.check("input[name=require_linked_person]")
    page.get_by_role("button", name="Set floor").click()
    page.wait_for_selector(".messages .message")
    row = page.locator("#floors li").first
    assert "acme/eu" in row.inner_text() and "2 approvers" in row.inner_text() and "people only" in row.inner_text()
    no_overflow(page)
    shoot(page, f"console-floors-{name}")
    context.close()
    floor = ApprovalFloor.objects.get()
    assert (floor.scope, floor.quorum, floor.require_linked_person) == ("acme/eu", 2, True)
