"""Delegation in the console, in real Chromium at 1280 px and 390 px (docs/console.md, "Delegation"): a person names
a delegate on the Away page; the delegate finds what waits for them there and approves for them; ending it works."""

from datetime import timedelta

import pytest
from django.utils import timezone

from suspensions.models import Approval, ApprovalVote, Delegation
from tests.browser.conftest import PHONE, logged_in, no_overflow, shoot
from tests.helpers import approval_pause, member

pytestmark = pytest.mark.browser

VIEWPORTS = [({"width": 1280, "height": 900}, "desktop"), (PHONE, "phone")]


def local(moment):
    return moment.strftime("%Y-%m-%dT%H:%M")


@pytest.mark.parametrize("viewport, name", VIEWPORTS)
def test_a_person_names_a_delegate_on_the_away_page_and_ends_it(chromium, site, viewport, name):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    member("bob", {}, is_staff=True)
    context, page = logged_in(chromium, site, "alice", viewport=viewport)
    page.get_by_role("link", name="Away").click()
    no_overflow(page)
    page.fill("input[name=to]", "bob")
    page.select_option("select[name=scope]", "acme")
    page.fill("input[name=ends_at]", local(timezone.now() + timedelta(days=3)))
    page.fill("input[name=reason]", "On leave")
    page.get_by_role("button", name="Name my delegate").click()
    page.wait_for_selector(".messages .message")
    row = page.locator("#delegations li").first
    assert "bob decides for alice in acme" in " ".join(row.inner_text().split())
    assert "active" in row.inner_text() and "On leave" in row.inner_text()
    no_overflow(page)
    shoot(page, f"console-away-{name}")
    made = Delegation.objects.get()
    assert (made.to_user.username, made.scope, made.reason, made.ended_at) == ("bob", "acme", "On leave", None)
    row.get_by_role("button", name="End").click()
    page.wait_for_selector("#delegations li .badge:text('ended')")
    assert Delegation.objects.get().ended_by == "user:alice"
    context.close()


def test_a_refused_delegation_comes_back_with_the_reason_next_to_its_field(chromium, site):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    context, page = logged_in(chromium, site, "alice", viewport=PHONE)
    page.goto(f"{site}/console/away/")
    page.fill("input[name=to]", "alice")
    page.fill("input[name=ends_at]", local(timezone.now() + timedelta(days=1)))
    page.get_by_role("button", name="Name my delegate").click()
    assert "Name another person" in page.locator("#error-to").inner_text()
    no_overflow(page)
    assert not Delegation.objects.exists()
    context.close()


@pytest.mark.parametrize("viewport, name", VIEWPORTS)
def test_the_delegate_decides_for_the_delegator_and_the_page_names_both(chromium, site, viewport, name):
    alice = member("alice", {"acme": ["approver"]}, is_staff=True)
    bob = member("bob", {}, is_staff=True)
    Delegation.objects.create(
        from_user=alice,
        to_user=bob,
        starts_at=timezone.now() - timedelta(minutes=1),
        ends_at=timezone.now() + timedelta(days=1),
        created_by="user:alice",
        created_at=timezone.now(),
        scope="acme",
        scope_l1="acme",
    )
    record = approval_pause("acme/support", quorum=2)
    context, page = logged_in(chromium, site, "bob", viewport=viewport)
    page.goto(f"{site}/console/away/")
    page.locator("#standing-in a").first.click()
    page.wait_for_selector("#acting-notice")
    assert page.locator("#acting-for").input_value() == "alice"
    no_overflow(page)
    page.locator("#approve-form button[type=submit]").click()
    page.wait_for_selector(".messages .message")
    assert "vote is recorded: 1 of 2" in page.locator(".messages").inner_text()
    assert "token:" not in page.locator("#policy-votes").inner_text()
    assert "user:bob for user:alice" in " ".join(page.locator("#policy-votes").inner_text().split())
    no_overflow(page)
    shoot(page, f"console-acting-for-{name}")
    context.close()
    [vote] = ApprovalVote.objects.filter(suspension_id=record.pk)
    assert (vote.voter, vote.acting_for, vote.voter_key) == ("user:bob", "user:alice", f"user#{alice.pk}")
    assert Approval.objects.get(pk=record.pk).status == "pending"
