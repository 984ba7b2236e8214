"""The browser tests' shared parts: Debian's Chromium, the live console, a signed-in page, screenshots.

Screenshots land in test-artifacts/ (gitignored) for a human to look at; `shoot` writes one page at
desktop width and, with `phone=True`, asserts the 390 px layout has no horizontal overflow.
"""

import os
from pathlib import Path

import pytest

from tests.helpers import call, continuation, post, register

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WAIT_MS = 15_000


@pytest.fixture(scope="module")
def chromium():
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make browser)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def site(live_server, settings):
    # The live server speaks plain HTTP; secure-only cookies would never come back.
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    ARTIFACTS.mkdir(exist_ok=True)
    return live_server.url


def paused(engine, agent_id, tool, arguments, ttl, scope="acme", cont=None):
    run = register(engine, scope, agent_id=agent_id)
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": [call(name=tool, arguments=arguments)],
        "continuation": cont or continuation(),
        "ttl_seconds": ttl,
    }
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def demo_inbox(engine):
    rows = [
        ("refund-agent", "send_refund", '{"order": "A-1042", "amount": 900, "currency": "EUR"}', 86400),
        ("refund-agent", "send_refund", '{"order": "A-1077", "amount": 45, "currency": "EUR"}', 3000),
        ("ops-agent", "restart_service", '{"service": "billing-api", "region": "eu-west-1"}', 600),
        ("ops-agent", "delete_records", '{"table": "sessions", "older_than_days": 90}', 200),
    ]
    return [paused(engine, *row) for row in rows]


def logged_in(chromium, site, username, viewport=None, **options):
    """A signed-in page; `options` go to the browser context (e.g. timezone_id="Europe/Berlin")."""
    context = chromium.new_context(viewport=viewport or {"width": 1360, "height": 900}, **options)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(f"{site}/console/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")
    page.wait_for_url(f"{site}/console/")
    return context, page


PHONE = {"width": 390, "height": 844}


def no_overflow(page) -> None:
    """The page fits its viewport: nothing scrolls sideways (the approver on a phone:
    docs/decisions.md, "The console's layout, accessibility, and its people")."""
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"{page.url} is {width} px wide in a {inner} px viewport"


def shoot(page, name: str) -> None:
    """A full-page screenshot under test-artifacts/<name>.png."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
