"""The console's Notifications page in real Chromium (docs/notifications.md, "Routes"): an operator adds an email route,
on a phone too."""

import pytest

from suspensions.models import NotificationRoute
from tests.browser.conftest import PHONE, logged_in, no_overflow, shoot
from tests.helpers import member

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("viewport, name", [(None, "desktop"), (PHONE, "phone")])
def test_an_operator_adds_a_route_and_sees_it_listed(chromium, site, viewport, name):
    member("olga", {"acme": ["operator"]}, is_staff=True)
    context, page = logged_in(chromium, site, "olga", viewport=viewport)
    page.goto(f"{site}/console/notification-routes/")
    page.fill("#route-form input[name=target]", "oncall-with-a-rather-long-address@example.com")
    page.get_by_role("button", name="Create route").click()
    page.wait_for_selector(".messages .message")
    assert "oncall-with-a-rather-long-address@example.com" in page.inner_text("#routes")
    no_overflow(page)
    shoot(page, f"console-routes-{name}")
    context.close()
    assert NotificationRoute.objects.get().target == "oncall-with-a-rather-long-address@example.com"
