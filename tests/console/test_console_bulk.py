"""Deciding several approvals from the inbox at once (docs/console.md, "Deciding several at once"): each through the
approval page's own service call, the inbox then saying what happened to each; a wrong form decides nothing."""

import re

from django.test import Client

from suspensions.models import Approval, Run
from tests.console.test_console import approval, decide, page
from tests.helpers import call, client, member, snapshot

BULK = "/console/approvals/decide"


def refund(engine, agent_id="refund-agent", amount=900, **kwargs):
    return approval(engine, agent_id=agent_id, pending=[call(name="send_refund", arguments=f'{{"amount": {amount}}}')])


def form(*pauses, decision="approve", reason="", **extra):
    data = {"decision": decision, "reason": reason, "approval": [s["id"] for s in pauses], **extra}
    for s in pauses:
        data[f"version-{s['id']}"] = f"{s['run_id']}:{s['run_revision']}"
    return data


def results_of(html):
    """(approval id, Decided|Refused, text) of each listed result, in order."""
    found = re.findall(
        r'data-result="([^"]+)">\s*<span class="badge [^"]+">(\w+)</span>'
        r'.*?<div class="bulk-result-text">([^<]*)</div>',
        html,
        re.S,
    )
    return [(pk, badge, text.replace("&#x27;", "'").replace("&quot;", '"')) for pk, badge, text in found]


def test_the_inbox_offers_a_checkbox_and_the_shown_version_for_each_row_this_approver_may_decide(engine, token):
    mine = refund(engine)
    audited = approval(client(token("globex", ["engine"], "globex-engine")))
    carol = Client()
    carol.force_login(member("carol", {"acme": ["approver"], "globex": ["auditor"]}, is_staff=True))
    html = page(carol, "/console/approvals/")
    assert f'data-approval="{audited["id"]}"' in html
    assert f'name="approval" value="{mine["id"]}"' in html
    assert f'name="version-{mine["id"]}" value="{mine["run_id"]}:{mine["run_revision"]}"' in html
    assert f'value="{audited["id"]}"' not in html
    assert 'id="shortcuts"' in html and "inbox.js" in html


def test_approving_several_decides_each_and_the_inbox_lists_what_happened_to_each(engine, as_alice, token):
    first, second, taken = refund(engine), refund(engine, "ops-agent"), refund(engine)
    bob = Client()
    bob.force_login(member("bob", {"acme": ["approver"]}, is_staff=True))
    decide(bob, taken, reason="mine")
    response = as_alice.post(BULK, form(first, taken, second, reason="batch ok"), follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == "/console/approvals/"
    assert results_of(html) == [
        (first["id"], "Decided", "Approved. The run is running at revision 3 and waits for its engine."),
        (taken["id"], "Refused", "Another approver already approved it."),
        (second["id"], "Decided", "Approved. The run is running at revision 3 and waits for its engine."),
    ]
    assert "Approved 2 of 3. Each one is listed below." in html
    records = {str(a.pk): a for a in Approval.objects.all()}
    assert [(records[s["id"]].status, records[s["id"]].decided_by) for s in (first, second, taken)] == [
        ("approved", "user:alice"),
        ("approved", "user:alice"),
        ("approved", "user:bob"),
    ]
    assert records[first["id"]].note == "batch ok"
    # Shown once: the next visit of the inbox has no results.
    assert "bulk-results" not in page(as_alice, "/console/approvals/")


def test_denying_several_with_one_reason_fails_each_run_with_it(engine, as_alice):
    pauses = [refund(engine) for _ in range(3)]
    html = as_alice.post(BULK, form(*pauses, decision="deny", reason="Not this week."), follow=True).content.decode()
    assert [r[1] for r in results_of(html)] == ["Decided"] * 3
    assert {Run.objects.get(pk=s["run_id"]).error for s in pauses} == {"rejected: Not this week."}


def test_the_same_form_again_replays_each_and_changes_nothing(engine, as_alice):
    pauses = [refund(engine) for _ in range(2)]
    as_alice.post(BULK, form(*pauses, decision="deny", reason="no"))
    before = snapshot()
    html = as_alice.post(BULK, form(*pauses, decision="deny", reason="no"), follow=True).content.decode()
    assert snapshot() == before
    assert [r[2] for r in results_of(html)] == ["You had already denied this; nothing changed."] * 2


def test_a_stale_row_is_refused_with_why_and_the_others_go_through(engine, as_alice):
    fresh, stale = refund(engine), refund(engine)
    data = form(fresh, stale)
    data[f"version-{stale['id']}"] = f"{stale['run_id']}:1"
    html = as_alice.post(BULK, data, follow=True).content.decode()
    assert [(r[0], r[1]) for r in results_of(html)] == [(fresh["id"], "Decided"), (stale["id"], "Refused")]
    assert results_of(html)[1][2] == "The run moved on since you opened this page."
    assert Approval.objects.get(pk=stale["id"]).status == "pending"


def test_an_approval_outside_the_users_scopes_is_refused_as_not_found(engine, as_alice, token):
    elsewhere = approval(client(token("globex", ["engine"], "globex-engine")))
    html = as_alice.post(BULK, form(elsewhere), follow=True).content.decode()
    gone = "This approval no longer exists or is outside your scopes."
    assert results_of(html) == [(elsewhere["id"], "Refused", gone)]
    assert Approval.objects.get(pk=elsewhere["id"]).status == "pending"


def test_a_denial_without_a_reason_decides_nothing_and_keeps_the_selection(engine, as_alice):
    pauses = [refund(engine) for _ in range(2)]
    before = snapshot()
    response = as_alice.post(BULK, form(*pauses, decision="deny", reason="  "), follow=True)
    assert snapshot() == before
    html = response.content.decode()
    assert "A denial needs a reason. Nothing was decided." in html
    assert all(f'value="{s["id"]}" id="select-{s["id"]}" checked' in html for s in pauses)


def test_a_form_without_a_selection_or_with_a_broken_version_decides_nothing(engine, as_alice):
    s = refund(engine)
    before = snapshot()
    nothing = as_alice.post(BULK, {"decision": "approve", "reason": ""}, follow=True).content.decode()
    assert "Select at least one approval. Nothing was decided." in nothing
    broken = as_alice.post(BULK, {**form(s), f"version-{s['id']}": "x:y"}, follow=True).content.decode()
    assert "The inbox page was out of date; reload it and select again." in broken
    too_many = form(s)
    too_many["approval"] = [f"00000000-0000-7000-8000-{n:012d}" for n in range(101)]
    assert "Select at most 100 approvals at once." in as_alice.post(BULK, too_many, follow=True).content.decode()
    assert snapshot() == before


def test_a_get_or_a_signed_out_post_decides_nothing(engine, alice):
    s = refund(engine)
    before = snapshot()
    c = Client()
    assert c.post(BULK, form(s)).status_code == 302
    c.force_login(alice)
    assert c.get(BULK).status_code == 405
    assert snapshot() == before
