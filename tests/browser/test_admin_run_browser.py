"""The auditor's run page in Django admin, in a real Chromium at 1280 and 390 px
(docs/decisions.md, "The run's admin page").

Screenshots: test-artifacts/admin-run-1280.png and admin-run-390.png, for a human to look at.
"""

import pytest
from playwright.sync_api import expect

from suspensions.models import ApprovalVote, WebhookMessage
from tests.browser.conftest import ARTIFACTS, PHONE, WAIT_MS, no_overflow
from tests.helpers import member
from tests.run_history import rich_run

pytestmark = pytest.mark.browser


def admin_page(chromium, site, viewport):
    context = chromium.new_context(viewport=viewport)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(f"{site}/admin/login/")
    page.fill("input[name=username]", "audrey")
    page.fill("input[name=password]", "pw")
    page.click("input[type=submit]")
    page.wait_for_url(f"{site}/admin/")
    return context, page


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
def test_an_auditor_reads_a_rich_runs_whole_history_on_its_admin_page(chromium, site, width):
    member("audrey", {"acme": ["auditor"]}, is_staff=True)
    run = rich_run()
    viewport = {"width": 1280, "height": 900} if width == 1280 else PHONE
    context, page = admin_page(chromium, site, viewport)
    page.goto(f"{site}/admin/suspensions/run/{run.id}/change/")

    for heading in ("Verify this run", "Live pause", "Approvals and votes", "Admissions", "Starts", "Events"):
        expect(page.locator(".history-section h2", has_text=heading)).to_be_visible()
    expect(page.locator("#history-verify")).to_contain_text("The audit chain of this run verifies.")
    expect(page.locator("#history-pause .tool-names li")).to_have_text(["refund"])
    expect(page.locator("#pause-pending")).to_contain_text('"name": "refund"')
    votes = page.locator("#history-approvals table.votes tbody tr")
    expect(votes).to_have_count(ApprovalVote.objects.filter(run_id=run.id).count())
    expect(votes.nth(1)).to_contain_text("ok <b>bold</b>")  # escaped text, not markup
    messages = page.locator("#history-messages tbody tr")
    expect(messages).to_have_count(WebhookMessage.objects.filter(run_id=run.id).count())
    expect(messages.first).to_contain_text("delivered")
    expect(page.locator("#console-link")).to_have_attribute("href", f"/console/runs/{run.id}/")
    no_overflow(page)

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"admin-run-{width}.png"), full_page=True)
    page.click("#console-link")
    expect(page.locator("#admin-link")).to_have_attribute("href", f"/admin/suspensions/run/{run.id}/change/")
    context.close()
