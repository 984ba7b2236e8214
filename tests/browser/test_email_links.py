"""One-click email links on a phone, in real Chromium (docs/notifications.md, "Email"): open the link of a real mail,
confirm, done.

The approver is not signed in: the link is the capability. Opening it shows
the confirmation page and decides nothing; pressing Approve decides.
Screenshots: test-artifacts/email-link-390.png (the confirmation) and
email-link-390-done.png (the result).
"""

import re

import pytest

from suspensions.models import Approval
from tests.browser.conftest import PHONE, WAIT_MS, no_overflow, shoot
from tests.helpers import member, notify_all
from tests.push.test_notify import request_approval

pytestmark = pytest.mark.browser


def test_an_approver_approves_from_the_link_in_their_email_on_a_phone(chromium, site, settings, mailoutbox):
    settings.CONSOLE_BASE_URL = site
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = request_approval(arguments='{"order": "A-1042", "amount": 900, "currency": "EUR"}')
    notify_all()
    (mail,) = mailoutbox
    link = re.search(r"^Approve: (\S+)$", mail.body, re.M).group(1)
    assert link.startswith(f"{site}/console/act/")

    context = chromium.new_context(viewport=PHONE)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(link)
    assert page.locator("h1").inner_text() == "Approve this request?"
    assert "send_refund" in page.inner_text("#act") and "A-1042" in page.inner_text("#act")
    no_overflow(page)
    shoot(page, "email-link-390")
    assert Approval.objects.get(pk=approval.pk).status == "pending"  # opening the link decided nothing

    page.get_by_role("button", name="Approve").click()
    page.wait_for_selector("#act-done")
    assert "Approved." in page.inner_text("#act-done")
    no_overflow(page)
    shoot(page, "email-link-390-done")
    context.close()
    assert Approval.objects.get(pk=approval.pk).status == "approved"
