"""Approvals at risk (docs/console.md): past 80% of their window, created to deadline, they are marked in the inbox and
on the dashboard, and the inbox and the API list them alone with `at_risk=true`; a chain shows on the policy card."""

import re
from datetime import timedelta

import pytest
from django.test import Client

from suspensions.clock import db_now
from suspensions.models import Approval, Suspension
from tests.helpers import approval_pause, client, member


def aged(record, seconds_gone, window=1000):
    """Make `record` look asked `seconds_gone` seconds ago with a `window`-second deadline, as the clock would."""
    now = db_now()
    created, expires = (
        now - timedelta(seconds=seconds_gone),
        now - timedelta(seconds=seconds_gone) + timedelta(seconds=window),
    )
    Suspension.objects.filter(pk=record.pk).update(created_at=created, expires_at=expires, deadline=expires)
    at_risk = Approval.at_risk_from(created, expires)
    Approval.objects.filter(pk=record.pk).update(created_at=created, expires_at=expires, at_risk_at=at_risk)
    return record


@pytest.fixture
def two(db):
    calm = aged(approval_pause("acme", agent="calm-agent"), 100)
    risky = aged(approval_pause("acme", agent="risky-agent"), 900)
    return calm, risky


def rows_of(html):
    return re.findall(r'<tr data-approval="([^"]+)">(.*?)</tr>', html, flags=re.S)


def test_the_inbox_marks_approvals_at_risk_and_filters_them(as_alice, two):
    calm, risky = two
    rows = dict(rows_of(as_alice.get("/console/approvals/").content.decode()))
    assert "status-at-risk" in rows[str(risky.pk)] and "status-at-risk" not in rows[str(calm.pk)]
    only = as_alice.get("/console/approvals/?at_risk=true").content.decode()
    assert [r for r, _ in rows_of(only)] == [str(risky.pk)]
    assert 'name="at_risk" value="true" checked' in only
    # The filter travels to the approval page and back, as the others do.
    assert f"/console/approvals/{risky.pk}/?at_risk=true" in only
    bad = as_alice.get("/console/approvals/?at_risk=maybe").content.decode()
    assert rows_of(bad) == [] and "No approval is listed until the filter is fixed." in bad


def test_the_dashboard_counts_the_approvals_at_risk_and_links_to_them(as_alice, two):
    html = as_alice.get("/console/").content.decode()
    count = re.search(r'id="at-risk-count"[^>]*href="([^"]+)".*?<span class="stat-value">(\d+)</span>', html, re.S)
    assert count is not None and count.groups() == ("/console/approvals/?at_risk=true", "1")


def test_an_extension_takes_an_approval_out_of_risk(db, two):
    calm, risky = two
    operator = Client()
    operator.force_login(member("olga", {"acme": ["approver", "operator"]}, is_staff=True))
    moved = operator.post(f"/console/approvals/{risky.pk}/extend", {"seconds": "86400", "reason": "out today"})
    assert moved.status_code == 302
    assert rows_of(operator.get("/console/approvals/?at_risk=true").content.decode()) == []


def test_the_api_lists_only_the_approvals_at_risk_with_at_risk_true(token, two):
    calm, risky = two
    reader = client(token("acme", ["approver"], "reader"))
    ids = lambda query: [r["id"] for r in reader.get(f"/api/v1/approvals{query}").json()["results"]]  # noqa: E731
    assert ids("?at_risk=true") == [str(risky.pk)]
    assert ids("?at_risk=false") == [str(calm.pk)]
    assert sorted(ids("")) == sorted([str(calm.pk), str(risky.pk)])
    bad = reader.get("/api/v1/approvals?at_risk=yes")
    assert bad.status_code == 400 and "at_risk" in bad.json()["errors"]


def test_the_policy_card_lists_an_escalation_chain_in_words(as_alice):
    chain = [
        {"after_seconds": 600, "notify": {"people": ["ann"]}},
        {"after_seconds": 1800, "notify": {"groups": ["leads"], "scopes": ["acme"]}},
    ]
    record = approval_pause("acme/support", escalation=chain)
    html = as_alice.get(f"/console/approvals/{record.pk}/").content.decode()
    card = re.search(r'<li id="policy-chain">(.*?)</li>\s*</ol>', html, re.S)
    assert card is not None
    text = " ".join(re.sub(r"<[^>]+>", " ", card.group(1)).split())
    assert "after 10 min, ask approvers ann" in text
    assert "after 30 min, ask approvers of acme; approvers in group leads" in text
