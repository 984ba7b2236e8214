"""Single sign-on in real Chromium against a real OpenID Provider (docs/identity.md; issue 52, "Real parts").

oidc-provider-mock runs on a free port (tests/identity/provider.py); the browser
goes from the console's sign-in page to the provider's form and back: a person in a
mapped group lands on the inbox with their approvals, one in an unmapped group sees
nothing, signing out ends it, and a person disabled at the provider is out once
OIDC_RENEW_SECONDS have passed.
"""

import pytest

from suspensions.models import RoleMapping
from tests.browser.conftest import paused, shoot
from tests.identity import provider as idp

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def issuer():
    with idp.provider() as url:
        yield url


@pytest.fixture
def sso(settings, issuer, site):
    idp.configure(settings, issuer)
    row = RoleMapping(group="approvers", role="approver", created_by="test", created_at="2026-01-01T00:00:00Z")
    row.stamp_scope("acme")
    row.save()
    return site


def sign_in_through_the_provider(chromium, site, sub):
    """From the inbox, signed out, through the sign-in page and the provider's form, back to the inbox."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto(f"{site}/console/approvals/")
    page.wait_for_url(f"{site}/console/login/**")
    page.click("#sso-sign-in")
    page.fill("input[name=sub]", sub)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(f"{site}/console/approvals/")
    return context, page


def test_a_mapped_person_signs_in_lands_on_the_inbox_with_their_approvals_and_signs_out(chromium, sso, issuer, engine):
    pause = paused(engine, "refund-agent", "send_refund", '{"order": "A-1042"}', 3600)
    idp.person(
        issuer,
        "u-alice",
        email="alice@example.com",
        email_verified=True,
        groups=["approvers"],
        preferred_username="alice",
    )
    context, page = sign_in_through_the_provider(chromium, sso, "u-alice")
    assert page.locator(f"tr[data-approval='{pause['id']}']").is_visible()
    assert page.locator(".sidebar-user .who").inner_text() == "alice"
    shoot(page, "sso-inbox")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{sso}/console/login/**")
    page.goto(f"{sso}/console/approvals/")
    page.wait_for_url(f"{sso}/console/login/**")
    context.close()


def test_a_person_of_an_unmapped_group_sees_nothing(chromium, sso, issuer, engine):
    paused(engine, "refund-agent", "send_refund", '{"order": "A-1043"}', 3600)
    idp.person(issuer, "u-bob", email="bob@example.com", email_verified=True, groups=["strangers"])
    context, page = sign_in_through_the_provider(chromium, sso, "u-bob")
    assert page.locator("tr[data-approval]").count() == 0
    assert "No approval is waiting for a decision." in page.locator(".empty-state").inner_text()
    context.close()


def test_a_person_disabled_at_the_provider_is_out_within_the_renew_interval(chromium, sso, issuer, engine, settings):
    settings.OIDC_RENEW_SECONDS = 2
    pause = paused(engine, "refund-agent", "send_refund", '{"order": "A-1044"}', 3600)
    idp.person(issuer, "u-carol", groups=["approvers"])
    context, page = sign_in_through_the_provider(chromium, sso, "u-carol")
    assert page.locator(f"tr[data-approval='{pause['id']}']").is_visible()
    idp.disable(issuer, "u-carol")
    page.wait_for_timeout(2_500)  # past OIDC_RENEW_SECONDS: the next request asks the provider again
    page.goto(f"{sso}/console/approvals/{pause['id']}/")
    page.wait_for_url(f"{sso}/console/login/**")
    context.close()
