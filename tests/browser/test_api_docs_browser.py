"""/api/docs/ in a real browser: Swagger UI from the service itself shows the doors, summaries and examples."""

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from suspensions.api import docs
from tests.browser.conftest import ARTIFACTS, WAIT_MS

pytestmark = pytest.mark.browser


def test_the_docs_page_shows_every_door_the_summaries_and_the_request_examples(chromium, site):
    context = chromium.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    hosts = set()
    page.on("request", lambda request: hosts.add(urlsplit(request.url).netloc))
    page.goto(f"{site}/api/docs/")
    expect(page.locator(".opblock-tag")).to_have_count(len(docs.TAGS))
    shown = page.locator(".opblock-tag").evaluate_all("tags => tags.map(t => t.dataset.tag)")
    assert shown == [tag["name"] for tag in docs.TAGS]
    suspend = page.locator("#operations-runs-suspend_run")
    expect(suspend.locator(".opblock-summary-description")).to_have_text(docs.OPERATIONS["suspend_run"].summary)
    expect(suspend.locator(".opblock-summary-operation-id")).to_have_text("suspend_run")
    suspend.locator(".opblock-summary").click()
    expect(suspend.locator(".opblock-description-wrapper").first).to_contain_text("string holding JSON")
    # The request body Swagger offers is the first example: one the server accepts (tests/api/test_openapi.py).
    expect(suspend.locator(".body-param__example")).to_contain_text("query_warehouse")
    expect(suspend.locator(".examples-select").first).to_contain_text("agent reply without deadline")
    page.screenshot(path=str(ARTIFACTS / "api-docs.png"), full_page=False)
    context.close()
    assert hosts == {urlsplit(site).netloc}


@pytest.mark.parametrize("width", [1280, 390])
def test_an_operation_s_401_shows_the_problem_the_service_answers_not_one_made_up(chromium, site, width):
    context = chromium.new_context(viewport={"width": width, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.goto(f"{site}/api/docs/")
    register = page.locator("#operations-runs-register_run")
    register.locator(".opblock-summary").click()
    unauthenticated = register.locator('tr.response[data-code="401"]')
    unauthenticated.scroll_into_view_if_needed()
    example = unauthenticated.locator(".highlight-code, .microlight").first
    expect(example).to_contain_text('"code": "unauthenticated"')
    expect(example).to_contain_text("Authentication credentials were not provided.")
    # What Swagger UI made up from the schema before: every optional field of a problem, filled in.
    for invented in ('"receipt"', '"version"', '"unknown"'):
        expect(example).not_to_contain_text(invented)
    unauthenticated.screenshot(path=str(ARTIFACTS / f"api-docs-401-{width}.png"))
    context.close()
