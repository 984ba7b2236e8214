"""More time and approvals at risk in the console, in real Chromium at 1280 px and 390 px (issue 54): an operator sees
the at-risk mark on the dashboard and in the inbox, opens the approval, extends it with a reason, and it is no longer
at risk."""

from datetime import timedelta

import pytest

from suspensions.clock import db_now
from suspensions.models import Approval, Event, Suspension
from tests.browser.conftest import PHONE, logged_in, no_overflow, shoot
from tests.helpers import approval_pause, member

pytestmark = pytest.mark.browser


def at_risk(record):
    """`record` asked 900 s ago with a 1000 s deadline: past 80% of its window."""
    created = db_now() - timedelta(seconds=900)
    expires = created + timedelta(seconds=1000)
    Suspension.objects.filter(pk=record.pk).update(created_at=created, expires_at=expires, deadline=expires)
    Approval.objects.filter(pk=record.pk).update(
        created_at=created, expires_at=expires, at_risk_at=Approval.at_risk_from(created, expires)
    )
    return record


@pytest.mark.parametrize("viewport, name", [({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")])
def test_an_operator_extends_an_approval_at_risk_and_it_leaves_the_risk_list(chromium, site, viewport, name):
    member("olga", {"acme": ["approver", "operator"]}, is_staff=True)
    chain = [{"after_seconds": 600, "notify": {"groups": ["leads"]}}]
    risky = at_risk(approval_pause("acme", agent="risky-agent", ttl=3600, escalation=chain))
    approval_pause("acme", agent="calm-agent", ttl=3600)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    assert page.locator("#at-risk-count .stat-value").inner_text() == "1"
    no_overflow(page)
    shoot(page, f"console-dashboard-at-risk-{name}")
    page.click("#at-risk-count")
    page.wait_for_url(f"{site}/console/approvals/?at_risk=true")
    rows = page.locator("tr[data-approval]")
    assert rows.count() == 1 and "at risk" in rows.first.inner_text()
    assert page.locator("input[name=at_risk]").is_checked()
    no_overflow(page)
    shoot(page, f"console-inbox-at-risk-{name}")
    rows.first.get_by_role("link", name="Review").click()
    page.wait_for_selector("#extend-form")
    assert "after 10 min, ask approvers in group leads" in page.locator("#policy-chain").inner_text()
    page.select_option("#extend-form select[name=seconds]", "86400")
    page.fill("#extend-form textarea[name=reason]", "finance is out until tomorrow")
    no_overflow(page)
    page.locator("#extend-form").get_by_role("button", name="Extend").click()
    page.wait_for_selector(".messages .message")
    assert page.locator(".messages .message").first.inner_text().startswith("Extended: the deadline is now")
    no_overflow(page)
    shoot(page, f"console-extended-{name}")
    page.goto(f"{site}/console/approvals/?at_risk=true")
    assert page.locator("tr[data-approval]").count() == 0
    context.close()
    assert (
        Event.objects.get(run_id=risky.run_id, kind="deadline_extended").data["note"] == "finance is out until tomorrow"
    )
