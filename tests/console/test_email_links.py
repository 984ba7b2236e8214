"""One-click email links (docs/notifications.md, "Email"): `/console/act/{token}` confirms on GET, decides on its POST,
refuses as pages.

Every refusal is a page with a 4xx status and writes nothing (tests.helpers.snapshot).
"""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from suspensions import email_links
from suspensions.clock import db_now
from suspensions.models import Approval, ApprovalVote, Membership, Run
from tests.helpers import approval_pause, member, notify_all, snapshot

pytestmark = pytest.mark.django_db


def link(user, approval, decision="approve", revision=2, expires_at=None):
    token = email_links.mint(
        user_id=user.pk,
        approval_id=approval.pk,
        run_id=approval.run_id,
        decision=decision,
        revision=revision,
        expires_at=expires_at or approval.expires_at,
    )
    return reverse("console:act", args=[token])


def approver(name="alice", scope="acme"):
    return member(name, {scope: ["approver"]}, is_staff=True, email=f"{name}@example.com")


def refused(response, status, words):
    assert response.status_code == status, response.content[:500]
    assert words in response.content.decode()
    assert 'id="act-form"' not in response.content.decode()


def test_the_get_shows_what_would_be_decided_and_decides_nothing():
    alice, approval = approver(), approval_pause()
    before = snapshot()

    response = Client().get(link(alice, approval))

    assert response.status_code == 200
    page = response.content.decode()
    assert "Approve this request?" in page and "send_refund" in page and "refund-agent" in page
    assert 'id="act-form"' in page and "csrfmiddlewaretoken" in page
    assert snapshot() == before


def test_the_post_approves_as_the_links_approver_through_the_decide_service():
    alice, approval = approver(), approval_pause()

    response = Client().post(link(alice, approval), {"reason": "fine"})

    assert response.status_code == 200
    assert "Approved." in response.content.decode()
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by, approval.note) == ("approved", "user:alice", "fine")
    assert Run.objects.get(pk=approval.run_id).state == "running"


def test_a_second_post_of_a_used_link_says_so_and_writes_nothing():
    alice, approval = approver(), approval_pause()
    url = link(alice, approval)
    Client().post(url)
    before = snapshot()

    for send in (Client().post, Client().get):
        refused(send(url), 409, "already decided")
    assert snapshot() == before


def test_a_deny_link_asks_for_a_reason_and_denies_with_it():
    alice, approval = approver(), approval_pause()
    url = link(alice, approval, "deny")
    assert 'name="reason"' in Client().get(url).content.decode()
    before = snapshot()

    empty = Client().post(url, {"reason": "  "})
    assert empty.status_code == 400 and "needs a reason" in empty.content.decode()
    assert snapshot() == before

    assert Client().post(url, {"reason": "too much"}).status_code == 200
    approval.refresh_from_db()
    assert (approval.status, approval.note) == ("denied", "too much")
    assert Run.objects.get(pk=approval.run_id).error == "rejected: too much"


def test_an_expired_link_or_approval_is_refused_and_writes_nothing():
    alice, approval = approver(), approval_pause()
    old = link(alice, approval, expires_at=db_now() - timedelta(seconds=1))
    before = snapshot()
    refused(Client().post(old), 410, "expired")
    Approval.objects.filter(pk=approval.pk).update(expires_at=db_now() - timedelta(seconds=1))
    refused(Client().post(link(alice, approval, expires_at=db_now() + timedelta(hours=1))), 410, "expired")
    assert snapshot()["votes"] == before["votes"] and snapshot()["runs"] == before["runs"]


def test_a_stale_link_is_refused_and_never_applied_to_a_newer_approval_pause():
    alice, approval = approver(), approval_pause()
    before = snapshot()

    refused(Client().post(link(alice, approval, revision=1)), 409, "out of date")

    assert snapshot() == before


def test_a_link_whose_approver_lost_the_role_or_asked_for_the_approval_is_refused():
    alice = approver()
    ada = member("ada", {"acme": ["approver", "engine"]}, is_staff=True, email="ada@example.com")
    mine = approval_pause(by=ada, exclude_requester=True)
    other = approval_pause()
    Membership.objects.filter(user=alice).delete()
    before = snapshot()

    refused(Client().post(link(ada, mine)), 403, "you cannot decide it")
    refused(Client().post(link(alice, other)), 403, "approver role")

    assert snapshot() == before


def test_a_deactivated_approvers_old_link_reveals_neither_the_outcome_nor_who_decided():
    alice, bob = approver(), approver("bob")
    approval = approval_pause()
    url = link(alice, approval)
    Client().post(link(bob, approval), {"reason": "bob says yes"})
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    before = snapshot()

    for send in (Client().get, Client().post):
        page = send(url)
        refused(page, 403, "approver role")
        text = page.content.decode()
        assert "bob" not in text and "approved" not in text.lower() and "Already decided" not in text
    assert snapshot() == before


def test_a_tampered_token_is_a_404_page():
    alice, approval = approver(), approval_pause()
    url = link(alice, approval)
    before = snapshot()

    for bad in (url[:-3] + "abc", url.replace("act/", "act/x"), reverse("console:act", args=["nonsense"])):
        refused(Client().post(bad), 404, "not valid")
    assert snapshot() == before


def test_a_quorum_links_vote_counts_once():
    alice, bob = approver(), approver("bob")
    approval = approval_pause(quorum=2)
    url = link(alice, approval)

    voted = Client().post(url)
    assert "Your vote is recorded: 1 of 2" in voted.content.decode()
    before = snapshot()
    refused(Client().post(url), 409, "already voted")
    assert snapshot() == before

    Client().post(link(bob, approval))
    approval.refresh_from_db()
    assert approval.status == "approved"
    assert ApprovalVote.objects.filter(suspension_id=approval.pk).count() == 2


def test_the_post_needs_the_pages_csrf_token():
    alice, approval = approver(), approval_pause()
    client = Client(enforce_csrf_checks=True)
    url = link(alice, approval)
    before = snapshot()

    assert client.post(url).status_code == 403
    assert snapshot() == before
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', client.get(url).content.decode()).group(1)
    assert client.post(url, {"csrfmiddlewaretoken": token}).status_code == 200
    assert Approval.objects.get(pk=approval.pk).status == "approved"


def test_with_login_required_the_link_asks_for_a_sign_in_and_only_its_approver_may_use_it(settings):
    settings.EMAIL_LINKS_REQUIRE_LOGIN = True
    alice, bob, approval = approver(), approver("bob"), approval_pause()
    url = link(alice, approval)

    anonymous = Client().get(url)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("console:login") + "?next=")
    assert url.removeprefix("/console/act/")[:12] not in anonymous["Location"]

    as_bob = Client()
    as_bob.force_login(bob)
    before = snapshot()
    refused(as_bob.post(url), 403, "another approver")
    assert snapshot() == before

    as_alice = Client()
    as_alice.force_login(alice)
    assert as_alice.get(url).status_code == 200
    assert as_alice.post(url).status_code == 200
    assert Approval.objects.get(pk=approval.pk).status == "approved"


def test_with_login_required_the_sign_in_next_holds_no_token_and_brings_the_approver_back_to_the_link(settings):
    settings.EMAIL_LINKS_REQUIRE_LOGIN = True
    alice, approval = approver(), approval_pause()
    url = link(alice, approval)
    browser = Client()

    to_login = browser.get(url)
    login_url = to_login["Location"]
    assert login_url == reverse("console:login") + "?next=" + reverse("console:act_resume")
    signed_in = browser.post(login_url, {"username": "alice", "password": "pw"})
    assert signed_in.status_code == 302 and signed_in["Location"] == reverse("console:act_resume")
    back = browser.get(signed_in["Location"])
    assert back.status_code == 302 and back["Location"] == url
    page = browser.get(url)
    assert page.status_code == 200 and "Approve this request?" in page.content.decode()
    assert browser.post(url).status_code == 200
    assert Approval.objects.get(pk=approval.pk).status == "approved"
    # The session kept the link only until it was used to come back.
    assert browser.get(reverse("console:act_resume"))["Location"] == reverse("console:inbox")


@pytest.mark.django_db(transaction=True)
def test_the_link_in_a_real_email_approves(mailoutbox):
    approver()
    approval = approval_pause()
    notify_all()

    url = re.search(r"^Approve: http://[^/]+(/console/act/\S+)$", mailoutbox[0].body, re.M).group(1)
    assert Client().post(url).status_code == 200

    assert Approval.objects.get(pk=approval.pk).status == "approved"
