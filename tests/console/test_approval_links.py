"""Sealed approval links (docs/api.md, "`POST /approvals/{id}/link`"; docs/console.md, "Links an agent hands its
person"): an engine mints one, a signed-in approver of the scope opens the approval page with it; a tampered,
foreign, expired, out-of-scope or used link is refused, and nothing refused writes anything.
"""

import json
from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from suspensions import approval_links, keys
from suspensions.clock import db_now
from suspensions.models import Run, Suspension
from suspensions.observability import redact
from tests.helpers import approval_pause, client, member, pause, problem, refused, snapshot

pytestmark = pytest.mark.django_db


def engine_of(token, scope="acme/support"):
    return client(token(scope, ["engine"], "link-engine"))


def mint(api, approval_id):
    response = api.post(f"/api/v1/approvals/{approval_id}/link")
    assert response.status_code == 200, response.content
    return response.json()


def signed_in(name="alice", grants=None):
    browser = Client()
    member(name, grants or {"acme": ["approver"]}, is_staff=True)
    assert browser.login(username=name, password="pw")
    return browser


def path_of(url):
    return urlparse(url).path


def test_an_engine_gets_a_sealed_link_that_opens_the_approval_page_for_an_approver(token):
    approval = approval_pause()
    before = snapshot()

    body = mint(engine_of(token), approval.pk)

    assert snapshot() == before  # minting writes nothing
    assert body["approval_id"] == str(approval.pk) and body["run_id"] == str(approval.run_id)
    assert str(approval.pk) not in body["url"] and str(approval.run_id) not in body["url"]  # sealed, not signed
    assert body["expires_at"] <= approval.expires_at.isoformat().replace("+00:00", "Z")
    opened = signed_in().get(path_of(body["url"]))
    assert opened.status_code == 302 and opened["Location"] == reverse("console:approval", args=[approval.pk])
    assert snapshot() == before  # opening decides nothing


def test_a_signed_out_visitor_signs_in_first_and_the_token_never_rides_the_sign_in_url(token):
    approval = approval_pause()
    url = path_of(mint(engine_of(token), approval.pk)["url"])
    member("alice", {"acme": ["approver"]}, is_staff=True)
    browser = Client()

    answer = browser.get(url)

    assert answer.status_code == 302 and answer["Location"].startswith(reverse(settings.LOGIN_URL))
    assert url.rsplit("/", 1)[1] not in answer["Location"]  # the token waits in the session, not in `next`
    assert browser.login(username="alice", password="pw")
    back = browser.get(reverse("console:open_resume"))
    assert back.status_code == 302 and back["Location"] == url
    assert browser.get(url)["Location"] == reverse("console:approval", args=[approval.pk])


def decide_in_console(browser, approval, decision, reason):
    """The approval page's own form, with the version the page showed."""
    version = browser.get(reverse("console:approval", args=[approval.pk])).context["decision"]["version"]
    form = {"decision": decision, "reason": reason, **version}
    answer = browser.post(reverse("console:decide", args=[approval.pk]), form)
    assert answer.status_code == 302, answer.content[:500]


def refused_page(browser, url, status, words):
    before = snapshot()
    answer = browser.get(url)
    assert answer.status_code == status, answer.content[:500]
    assert words in answer.content.decode()
    assert snapshot() == before


def test_a_used_link_is_refused_once_the_approval_is_decided(token):
    approval = approval_pause()
    url = path_of(mint(engine_of(token), approval.pk)["url"])
    browser = signed_in()
    decide_in_console(browser, approval, "approve", "ok")
    assert Run.objects.get(pk=approval.run_id).state == "running", "the console decided"

    refused_page(browser, url, 409, "already decided")


def test_a_tampered_or_foreign_token_is_a_404_that_leaks_nothing(token):
    approval = approval_pause()
    url = path_of(mint(engine_of(token), approval.pk)["url"])
    token_part = url.rsplit("/", 1)[1]
    flipped = token_part[:40] + ("A" if token_part[40] != "A" else "B") + token_part[41:]
    foreign = keys.seal(json.dumps({"a": str(approval.pk), "r": str(approval.run_id), "v": 2, "e": 9999999999}))
    browser = signed_in()
    for bad in (flipped, token_part[:-5], foreign, "not-a-token"):
        refused_page(browser, reverse("console:open_link", args=[bad]), 404, "Link not found")


def test_an_approver_of_another_scope_learns_nothing(token):
    url = path_of(mint(engine_of(token), approval_pause().pk)["url"])
    refused_page(signed_in("bob", {"other": ["approver"]}), url, 404, "Link not found")


def test_an_expired_link_and_one_minted_at_an_older_revision_are_refused(token):
    approval = approval_pause()
    now = db_now()
    old = approval_links.Link(approval.pk, approval.run_id, 2, now - timedelta(seconds=1))
    stale = approval_links.Link(approval.pk, approval.run_id, 1, now + timedelta(hours=1))
    browser = signed_in()
    refused_page(browser, reverse("console:open_link", args=[approval_links.mint(old)]), 410, "expired")
    refused_page(browser, reverse("console:open_link", args=[approval_links.mint(stale)]), 409, "out of date")


def test_minting_is_refused_before_anything_for_the_wrong_caller_or_pause(token):
    approval = approval_pause()
    other_scope = engine_of(token, "other")
    auditor = client(token("acme/support", ["auditor"], "link-auditor"))
    refused(lambda: other_scope.post(f"/api/v1/approvals/{approval.pk}/link"), 404, "not_found")
    refused(lambda: auditor.post(f"/api/v1/approvals/{approval.pk}/link"), 403, "forbidden")
    missing = "00000000-0000-0000-0000-000000000000"
    refused(lambda: engine_of(token).post(f"/api/v1/approvals/{missing}/link"), 404, "not_found")
    tool_wait = pause(engine_of(token), scope="acme/support")
    refused(lambda: engine_of(token).post(f"/api/v1/approvals/{tool_wait['id']}/link"), 403, "not_an_approval")


def test_minting_for_a_decided_or_expired_approval_is_refused(token):
    approval = approval_pause()
    decide_in_console(signed_in(), approval, "deny", "no")
    refused(lambda: engine_of(token).post(f"/api/v1/approvals/{approval.pk}/link"), 409, "not_suspended")
    late = approval_pause()
    # The deadline passes before any sweep has expired the pause.
    Suspension.objects.filter(pk=late.pk).update(expires_at=db_now() - timedelta(seconds=5))
    answer = engine_of(token).post(f"/api/v1/approvals/{late.pk}/link")
    problem(answer, 410, "suspension_expired")


def test_no_log_line_shows_a_links_token(token):
    url = path_of(mint(engine_of(token), approval_pause().pk)["url"])
    secret = url.rsplit("/", 1)[1]
    assert redact.path(url) == "/console/open/<redacted>"
    assert secret not in redact.text(f"GET {url} 302 next=%2Fconsole%2Fopen%2F{secret}")
