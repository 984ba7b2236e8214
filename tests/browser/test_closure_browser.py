"""T10 in a real browser: an operator closes an uncertain start from the console and reads the receipt."""

import pytest
from playwright.sync_api import expect

from suspensions.models import ClosureReceipt, Run
from tests.browser.conftest import ARTIFACTS, logged_in
from tests.closure_setup import started
from tests.helpers import member

pytestmark = pytest.mark.browser


def test_an_operator_closes_an_uncertain_start_from_the_console_and_sees_the_receipt(chromium, site):
    member("olga", {"acme": ["operator"]}, is_staff=True)
    claimed = started()
    run_id = claimed.run.id
    context, page = logged_in(chromium, site, "olga")

    # A start seconds old is listed only with the "recent" filter (UNCERTAIN_AFTER_SECONDS).
    page.goto(f"{site}/console/uncertain/?recent=1")
    page.click(f"#close-{run_id} a")
    expect(page.locator("#shown-start-digest")).to_have_text(claimed.start.digest)
    page.fill("input[name=issuer]", "cluster-controller")
    page.fill("input[name=issuer_revision]", "rev-7")
    page.fill("input[name=proof_ref]", "pods/agent-7/terminated <evicted>")
    page.fill("input[name=proof_digest]", "ab" * 32)
    # Observed at and valid until keep what the page filled in: now and one hour from now.
    page.screenshot(path=str(ARTIFACTS / "console-closure-form.png"), full_page=True)
    page.click("#closure-form button[type=submit]")

    expect(page.locator(".message-success")).to_contain_text("The run is incomplete")
    expect(page.locator("#receipt-integrity")).to_contain_text("Integrity check passed")
    expect(page.locator("#receipt-actor")).to_have_text("user:olga")
    expect(page.locator("pre code")).to_contain_text("pods/agent-7/terminated <evicted>")
    page.screenshot(path=str(ARTIFACTS / "console-closure-receipt.png"), full_page=True)
    receipt_digest = page.locator("#receipt-digest").inner_text()

    page.goto(f"{site}/console/runs/{run_id}/")
    expect(page.locator("#run-state")).to_have_text("incomplete")
    expect(page.locator(".timeline-item.kind-closed")).to_have_count(1)
    context.close()
    assert ClosureReceipt.objects.get().digest == receipt_digest
    assert Run.objects.get(pk=run_id).state == "incomplete"
