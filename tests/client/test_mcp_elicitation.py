"""suspensions-mcp's URL-mode elicitation, in sessions of the mcp SDK's own client (clients/python/README.md, "MCP
server"; docs/api.md, "`POST /approvals/{id}/link`").

The client declares URL elicitation; its callback is the person: it opens the
sealed link in Debian's Chromium (or with httpx), signs in to the console as an
approver, and decides on the approval's page. The tool call then comes back
decided and spent once. The state handed to the client (the link, the sealed
request_state) is refused replayed or altered.
"""

import asyncio
import os
import re
import threading
from contextlib import contextmanager

import httpx
import pytest
from mcp import Client as MCPClient
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult

from suspensions.models import Admission, Approval, Run, Start
from tests.browser.conftest import ARGS, CHROMIUM
from tests.helpers import member

from .test_mcp_server import REFUND, http_server, stdio, with_bearer

pytestmark = pytest.mark.slow


@pytest.fixture
def base_url(live_server, settings):
    """The project in-process (live_server), console pages included: the suite's gunicorn cannot render them (its
    static files have no manifest). The live server speaks plain HTTP, so its cookies are not secure-only."""
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False
    return live_server.url


ASK = {"agent_id": "desk-assistant", "tool": "send_refund", "arguments": REFUND, "scope": "acme"}


def approver(name="alice"):
    return member(name, {"acme": ["approver"]}, is_staff=True)


@contextmanager
def signed_in(base_url, name="alice"):
    """An httpx client with a console session of `name` (password "pw")."""
    with httpx.Client(base_url=base_url, timeout=30) as h:
        h.get("/console/login/")
        form = {"username": name, "password": "pw", "csrfmiddlewaretoken": h.cookies["csrftoken"]}
        assert h.post("/console/login/", data=form).status_code == 302
        yield h


def decide_by_link(base_url, url, decision, reason):
    """The approver opens the link (it leads to the approval's page) and decides with that page's form."""
    with signed_in(base_url) as h:
        page = h.get(url, follow_redirects=True)
        assert page.status_code == 200 and "/console/approvals/" in str(page.url), page.text[:500]
        hidden = dict(re.findall(r'name="(run_id|suspension_id|run_revision)" value="([^"]+)"', page.text))
        form = {**hidden, "decision": decision, "reason": reason, "csrfmiddlewaretoken": h.cookies["csrftoken"]}
        answer = h.post(f"{page.url.path}decide", data=form)
        assert answer.status_code == 302, answer.text[:500]


def decide_later(base_url, url, decision, reason):
    """The person decides after the client has answered the elicitation: the tool call waits for it."""
    thread = threading.Thread(target=decide_by_link, args=(base_url, url, decision, reason))
    thread.start()
    return thread


async def approve_in_chromium(base_url, url):
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = await browser.new_page()
        page.set_default_timeout(15_000)
        await page.goto(f"{base_url}/console/login/")
        await page.fill("input[name=username]", "alice")
        await page.fill("input[name=password]", "pw")
        await page.click("button[type=submit]")
        await page.wait_for_url(f"{base_url}/console/")
        await page.goto(url)
        assert "/console/approvals/" in page.url, page.url  # the link led to the approval's own page
        await page.fill("#approve-form textarea[name=reason]", "fine by me")
        await page.click("#approve-form button[type=submit]")
        await page.wait_for_load_state()
        await browser.close()


def in_session(server, steps, callback):
    async def go():
        async with MCPClient(server, read_timeout_seconds=60, elicitation_callback=callback) as client:
            return await steps(client)

    return asyncio.run(go())


def test_over_stdio_the_approver_decides_in_chromium_and_the_call_comes_back_spent_once(base_url, token):
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make browser)")
    approver()
    asked = []

    async def person(context, params):
        asked.append(params)
        await approve_in_chromium(base_url, params.url)
        return ElicitResult(action="accept")

    async def steps(client):
        return await client.call_tool("request_approval", ASK)

    result = in_session(stdio(base_url, token("acme", ["engine", "auditor"], "mcp-url")), steps, person)
    assert not result.is_error, result.content
    done = result.structured_content
    # 2026-07-28 carries no elicitation id inside an InputRequiredResult; the message names the approval.
    assert [p.mode for p in asked] == ["url"] and done["approval_id"] in asked[0].message
    assert asked[0].url.startswith(f"{base_url}/console/open/") and done["approval_id"] not in asked[0].url
    assert done["status"] == "approved" and done["claimed"] is True and done["decided_by"] == "user:alice"
    assert done["approved_calls"] == [{"tool": "send_refund", "arguments": REFUND, "edited": False}]
    assert Run.objects.get(pk=done["run_id"]).state == "completed"
    assert Start.objects.filter(run_id=done["run_id"]).count() == 1


def test_over_http_a_denial_after_the_elicitation_is_a_tool_error_and_runs_nothing(base_url, token):
    approver()
    deciding = []

    async def person(context, params):
        deciding.append(decide_later(base_url, params.url, "deny", "too much"))
        return ElicitResult(action="accept")  # the page is open; the decision comes later

    async def steps(client):
        return await client.call_tool("request_approval", ASK)

    http_token = "mcp-http-token-of-the-elicitation"
    with http_server(base_url, token("acme", ["engine", "auditor"], "mcp-url-http"), http_token=http_token) as url:
        result = in_session(with_bearer(url, http_token), steps, person)
    deciding[0].join()
    text = " ".join(part.text for part in result.content)
    assert result.is_error and "not_approved: the approval is denied: too much" in text
    run = Run.objects.get()
    assert run.state == "failed" and run.error == "rejected: too much"
    assert not Start.objects.exists()


def test_a_replayed_or_altered_request_state_and_a_used_link_are_refused(base_url, token):
    approver()

    async def steps(client):
        first = await client.session.call_tool("request_approval", ASK, allow_input_required=True)
        url = first.input_requests["approval"].params.url
        await asyncio.to_thread(decide_by_link, base_url, url, "approve", "ok")
        accept = {"approval": ElicitResult(action="accept")}
        state = first.request_state
        done = await client.session.call_tool("request_approval", ASK, input_responses=accept, request_state=state)
        again = await client.session.call_tool("request_approval", ASK, input_responses=accept, request_state=state)
        altered = state[:-6] + ("AAAAAA" if not state.endswith("AAAAAA") else "BBBBBB")
        try:
            await client.session.call_tool("request_approval", ASK, input_responses=accept, request_state=altered)
            tampered = None
        except MCPError as error:
            tampered = error
        return url, done, again, tampered

    url, done, again, tampered = in_session(
        stdio(base_url, token("acme", ["engine", "auditor"], "mcp-replay")), steps, lambda *_: None
    )
    assert not done.is_error and done.structured_content["claimed"] is True
    assert again.is_error and "resume_already_started" in again.content[0].text  # single use through the claim
    assert tampered is not None  # the SDK's seal refuses a state it did not mint
    assert Start.objects.count() == 1 and [a.state for a in Admission.objects.all()] == ["done"]
    assert Run.objects.count() == 1 and Run.objects.get().state == "completed"  # no retry registered another run
    with signed_in(base_url) as h:
        used = h.get(url)
    assert used.status_code == 409 and "already decided" in used.text


def test_a_person_who_declines_to_open_the_link_leaves_the_approval_pending_as_today(base_url, token):
    async def person(context, params):
        return ElicitResult(action="decline")

    async def steps(client):
        return await client.call_tool("request_approval", ASK)

    result = in_session(stdio(base_url, token("acme", ["engine", "auditor"], "mcp-decline")), steps, person)
    assert not result.is_error
    assert result.structured_content["status"] == "pending"
    assert Approval.objects.get().status == "pending" and not Start.objects.exists()


def test_over_the_2025_11_25_handshake_the_elicitation_comes_mid_call_and_the_call_comes_back_spent(base_url, token):
    approver()

    async def person(context, params):
        await asyncio.to_thread(decide_by_link, base_url, params.url, "approve", "ok")
        return ElicitResult(action="accept")

    async def go():
        server = stdio(base_url, token("acme", ["engine", "auditor"], "mcp-legacy"))
        async with MCPClient(server, read_timeout_seconds=60, elicitation_callback=person, mode="legacy") as client:
            return client.protocol_version, await client.call_tool("request_approval", ASK)

    version, result = asyncio.run(go())
    assert version == "2025-11-25"
    assert not result.is_error and result.structured_content["claimed"] is True
    assert Start.objects.count() == 1 and Run.objects.get().state == "completed"
