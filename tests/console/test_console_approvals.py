"""The approver's console, second pass (docs/decisions.md, "The approver's flow in the console"): decided pages, lost
sessions, filters, the next approval, times."""

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from suspensions import services, timefmt
from suspensions.models import Approval, Run, Suspension
from tests.console.test_console import approval, decide, page, start
from tests.helpers import call, client, continuation, member, snapshot

ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
READABLE = re.compile(r"\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}:\d{2} UTC")


def refund(engine, ttl_seconds=600, agent_id="refund-agent", name="send_refund", arguments='{"amount": 900}'):
    return approval(engine, ttl_seconds=ttl_seconds, agent_id=agent_id, pending=[call(name=name, arguments=arguments)])


def messages_in(html):
    return re.findall(r'class="message message-\w+">([^<]*)<', html)


# -- 1. a decided approval keeps what was asked ---------------------------------------------------


def test_a_denied_approval_page_still_shows_the_agent_tool_and_arguments_it_refused(engine, as_alice):
    s = refund(engine, arguments='{"amount": 900, "order": "A-1042"}')
    decide(as_alice, s, "deny", reason="too much")
    assert not Suspension.objects.filter(pk=s["id"]).exists()
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    assert "refund-agent asked for approval" in html
    assert "Tool call denied" in html and "send_refund" in html and "A-1042" in html
    assert "Denied by <strong>user:alice</strong>" in html and "too much" in html


def test_an_approved_and_started_approval_page_still_shows_its_calls_and_no_countdown(engine, as_alice):
    s = refund(engine, arguments='{"order": "A-1077"}')
    decide(as_alice, s, reason="fine")
    start(engine, s)
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    assert "Tool call approved" in html and "A-1077" in html and "refund-agent asked" in html
    assert 'id="decided-box"' in html and "data-deadline" not in html


def test_an_approved_but_unstarted_approval_shows_no_live_countdown(engine, as_alice):
    s = refund(engine)
    decide(as_alice, s)
    assert Suspension.objects.filter(pk=s["id"]).exists()  # the pause waits for its start
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    assert "data-deadline" not in html and 'id="decided-box"' in html


def test_a_pending_approval_counts_down_to_its_deadline(engine, as_alice):
    s = refund(engine)
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    assert "data-deadline" in html and 'id="decided-box"' not in html


# -- 2. a decision whose session ended ------------------------------------------------------------


def test_a_decision_without_a_session_is_kept_unsent_and_shown_after_signing_in(engine, alice):
    s = refund(engine)
    c = Client()
    before = snapshot()
    form = {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"], "decision": "deny"}
    response = c.post(f"/console/approvals/{s['id']}/decide", {**form, "reason": "Over the limit <b>"})
    assert response.status_code == 302
    assert response["Location"] == f"/console/login/?next=/console/approvals/{s['id']}/"
    assert snapshot() == before
    # The sign-in page says what was held back and what follows the sign-in.
    login = page(c, response["Location"])
    assert 'id="held-back"' in login and "Your denial was not sent" in login and "to send it again" in login
    signed_in = c.post(
        "/console/login/", {"username": "alice", "password": "pw", "next": f"/console/approvals/{s['id']}/"}
    )
    assert signed_in["Location"] == f"/console/approvals/{s['id']}/"
    html = page(c, signed_in["Location"])
    assert "Your denial was not sent." in html and "nothing was decided" in html
    assert "Over the limit &lt;b&gt;</textarea>" in html  # back in the deny form, escaped
    assert snapshot() == before
    assert 'id="unsent"' not in page(c, signed_in["Location"])  # shown once


def test_a_sign_in_page_with_nothing_held_back_says_nothing_of_it(db):
    assert 'id="held-back"' not in page(Client(), "/console/login/")


def test_the_kept_decision_shows_only_on_its_own_approval(engine, alice):
    s, other = refund(engine), refund(engine)
    c = Client()
    c.post(f"/console/approvals/{s['id']}/decide", {"decision": "approve", "reason": "ok then"})
    c.force_login(alice)
    assert "ok then" not in page(c, f"/console/approvals/{other['id']}/")
    assert "ok then</textarea>" in page(c, f"/console/approvals/{s['id']}/")


@pytest.mark.parametrize("signed_in", [True, False])
def test_a_get_of_the_decide_address_goes_to_the_approval_page_not_a_405(engine, as_alice, signed_in):
    s = refund(engine)
    c = as_alice if signed_in else Client()
    response = c.get(f"/console/approvals/{s['id']}/decide?tool=send&junk=1")
    assert (response.status_code, response["Location"]) == (302, f"/console/approvals/{s['id']}/?tool=send")


# -- 3. inbox filters ---------------------------------------------------------------------------------


def test_inbox_filters_match_part_of_a_name_in_any_case(engine, as_alice):
    send = refund(engine, agent_id="infra-agent")
    other = refund(engine, agent_id="ops-bot", name="delete_vpc")
    by_tool = as_alice.get("/console/approvals/?tool=SEND").context["rows"]
    assert [r["id"] for r in by_tool] == [send["id"]]
    by_agent = as_alice.get("/console/approvals/?agent_id=Infra").context["rows"]
    assert [r["id"] for r in by_agent] == [send["id"]]
    assert [r["id"] for r in as_alice.get("/console/approvals/?tool=vpc").context["rows"]] == [other["id"]]
    assert as_alice.get("/console/approvals/?tool=send_refund,delete").context["rows"] == []


def test_the_api_keeps_exact_agent_and_tool_filters(engine, token):
    refund(engine, agent_id="infra-agent")
    reader = client(token("acme", ["approver"], "reader"))
    assert reader.get("/api/v1/approvals?tool=send").json()["results"] == []
    assert len(reader.get("/api/v1/approvals?tool=send_refund").json()["results"]) == 1
    assert reader.get("/api/v1/approvals?agent_id=infra").json()["results"] == []


def test_the_inbox_says_how_many_approvals_match(engine, as_alice):
    for _ in range(2):
        refund(engine)
    refund(engine, name="delete_vpc")
    assert "3 pending approvals." in page(as_alice, "/console/approvals/")
    assert "2 pending approvals match these filters." in page(as_alice, "/console/approvals/?tool=refund")
    assert "1 pending approval matches these filters." in page(as_alice, "/console/approvals/?tool=vpc")


def test_the_count_covers_every_page_not_just_the_first(engine, as_alice, settings):
    settings.CONSOLE_PAGE_SIZE = 2
    for n in range(5):
        refund(engine, ttl_seconds=600 + n)
    first = as_alice.get("/console/approvals/")
    assert first.context["count"] == 5
    second = as_alice.get("/console/approvals/" + first.context["next_link"])
    assert second.context["count"] == 5 and len(second.context["rows"]) == 2


def test_a_filter_that_does_not_parse_lists_no_approval(engine, as_alice):
    refund(engine)
    response = as_alice.get("/console/approvals/?older_than=abc")
    html = response.content.decode()
    assert response.context["rows"] == [] and "older_than" in html and "notice-error" in html
    assert "No approval is listed until the filter is fixed." in html


def test_a_run_filter_that_does_not_parse_lists_no_run(engine, as_alice):
    refund(engine)
    response = as_alice.get("/console/runs/?created_after=yesterday")
    assert response.context["rows"] == [] and response.context["filter_errors"]


# -- 4. the next approval -----------------------------------------------------------------------------


def test_a_decision_leads_to_the_next_approval_of_the_same_filter_by_deadline(engine, as_alice):
    first, second = refund(engine, ttl_seconds=600), refund(engine, ttl_seconds=900)
    refund(engine, ttl_seconds=700, name="delete_vpc")  # sooner than `second`, outside the filter
    approval_page = page(as_alice, f"/console/approvals/{first['id']}/?tool=refund")
    assert 'name="filters" value="tool=refund"' in approval_page
    response = as_alice.post(
        f"/console/approvals/{first['id']}/decide",
        {
            "run_id": first["run_id"],
            "suspension_id": first["id"],
            "run_revision": first["run_revision"],
            "decision": "approve",
            "filters": "tool=refund",
        },
        follow=True,
    )
    assert response.redirect_chain[-1][0] == f"/console/approvals/{second['id']}/?tool=refund"
    assert messages_in(response.content.decode()) == [
        "Approved. The run is running at revision 3 and waits for its engine. Here is the next approval, by deadline."
    ]


def test_the_last_decision_of_a_filter_returns_to_its_inbox(engine, as_alice):
    only = refund(engine)
    refund(engine, name="delete_vpc")
    response = as_alice.post(
        f"/console/approvals/{only['id']}/decide",
        {
            "run_id": only["run_id"],
            "suspension_id": only["id"],
            "run_revision": only["run_revision"],
            "decision": "deny",
            "reason": "no",
            "filters": "tool=refund&evil=1",
        },
        follow=True,
    )
    assert response.redirect_chain[-1][0] == "/console/approvals/?tool=refund"
    assert "No other approval waits for you in this filter." in response.content.decode()


def test_the_next_approval_is_one_this_user_can_decide(engine, token):
    carol = member("carol", {"acme": ["approver"], "globex": ["auditor"]}, is_staff=True)
    c = Client()
    c.force_login(carol)
    mine = refund(engine, ttl_seconds=600)
    globex = client(token("globex", ["engine"], "globex-engine"))
    approval(globex, ttl_seconds=650)  # carol only audits globex
    expired = refund(engine, ttl_seconds=700)
    Suspension.objects.filter(pk=expired["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1), deadline=timezone.now() - timedelta(seconds=1)
    )
    response = decide(c, mine)
    assert response.redirect_chain[-1][0] == "/console/approvals/"


# -- 6. times -------------------------------------------------------------------------------------------


def test_an_expiry_error_and_the_timeline_show_readable_utc_times(engine, as_alice):
    s = refund(engine, ttl_seconds=60)
    services.expire_suspensions(now=timezone.now() + timedelta(minutes=5))
    assert ISO.search(Run.objects.get(pk=s["run_id"]).error)
    html = page(as_alice, f"/console/runs/{s['run_id']}/")
    error = re.search(r"<strong>Error:</strong>([^<]*)<", html).group(1)
    assert READABLE.search(error) and not ISO.search(error)
    timeline = html[html.index('class="timeline"') :]
    assert READABLE.search(timeline)
    assert not ISO.search(re.sub(r'datetime="[^"]*"', "", timeline))  # only machine-readable attributes keep ISO
    assert re.search(r"by its deadline \d{1,2} [A-Z][a-z]{2} \d{4}", page(as_alice, "/console/runs/"))  # the list too


def test_the_admin_writes_times_as_the_console_does(engine, db):
    s = refund(engine)
    admin = Client()
    admin.force_login(member("root", is_superuser=True, is_staff=True))
    record = Approval.objects.get(pk=s["id"])
    html = page(admin, f"/admin/suspensions/approval/{s['id']}/change/")
    assert timefmt.absolute(record.created_at) in html
    assert timefmt.absolute(record.created_at) in page(admin, f"/console/approvals/{s['id']}/").replace("\n", " ")


# -- 7. wording -------------------------------------------------------------------------------------------


def test_the_same_user_in_another_tab_is_told_they_already_decided(engine, as_alice):
    s = refund(engine)
    decide(as_alice, s, reason="first tab")
    before = snapshot()
    for second_tab in (("deny", "second tab"), ("approve", "a different note")):
        said = messages_in(decide(as_alice, s, *second_tab).content.decode())
        assert len(said) == 1 and said[0].startswith("You already decided this approval (approved at ")
        assert READABLE.search(said[0])
    assert snapshot() == before


def test_another_approvers_decision_is_still_someone_elses(engine, as_alice):
    s = refund(engine)
    bob = Client()
    bob.force_login(member("bob", {"acme": ["approver"]}, is_staff=True))
    decide(bob, s, "deny", "no")
    assert messages_in(decide(as_alice, s).content.decode()) == ["Someone else already decided this approval."]


def test_the_decision_form_has_no_refund_specific_placeholders(engine, as_alice):
    s = refund(engine, agent_id="net-agent", name="delete_vpc", arguments='{"vpc": "vpc-1"}')
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    panel = html[html.index('id="decision"') :]
    panel = panel[: panel.index("</section>")].lower()
    assert 'id="deny-form"' in panel and "placeholder=" in panel
    assert "refund" not in panel and "amount" not in panel and "order" not in panel


def test_one_message_is_one_message(engine, as_alice):
    cont = continuation(messages=[{"role": "user", "content": "hi"}], new_messages_from=0, system_prompt="x")
    s = approval(engine, cont=cont)
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    assert ">1 message<" in html and "1 messages" not in html
    assert "1 character<" in html


def test_an_auditor_sees_the_decided_calls_too(engine, as_alice):
    s = refund(engine, arguments='{"order": "Z-9"}')
    decide(as_alice, s, "deny", "no")
    c = Client()
    c.force_login(member("audrey", {"acme": ["auditor"]}, is_staff=True))
    assert "Z-9" in page(c, f"/console/approvals/{s['id']}/")
