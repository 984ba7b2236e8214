"""The staff console (docs/decisions.md, "The approver's flow in the console"): every page and form, through the Django
test client on PostgreSQL."""

from datetime import timedelta
from uuid import UUID

import pytest
from django.test import Client
from django.utils import timezone

from suspensions.models import Admission, Approval, Event, Run, Suspension
from tests.helpers import call, client, continuation, member, pause, post, snapshot

XSS = "<script>alert(1)</script>"


@pytest.fixture
def globex(db, token):
    return client(token("globex", ["engine"], "globex-engine"))


def approval(engine, **kwargs):
    return pause(engine, reason="approval", **kwargs)


def decide(c, s, decision="approve", reason="", revision=None, suspension_id=None):
    form = {
        "run_id": s["run_id"],
        "suspension_id": suspension_id or s["id"],
        "run_revision": revision or s["run_revision"],
        "decision": decision,
        "reason": reason,
    }
    return c.post(f"/console/approvals/{s['id']}/decide", form, follow=True)


def page(c, url):
    response = c.get(url)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def start(engine, s):
    admission = Admission.objects.get(suspension_id=s["id"])
    response = post(engine, f"/api/v1/admissions/{admission.id}/start", {})
    assert response.status_code == 201, response.content
    return response.json()


# -- login, redirects, CSRF -----------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/console/",
        "/console/approvals/",
        "/console/approvals/0190d7a0-0000-7000-8000-000000000000/",
        "/console/runs/",
        "/console/runs/0190d7a0-0000-7000-8000-000000000000/",
        "/console/uncertain/",
    ],
)
def test_every_console_page_redirects_an_anonymous_visitor_to_the_login(db, url):
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/console/login/?next=")


def test_an_anonymous_decision_is_redirected_to_the_login_and_writes_nothing(engine):
    s = approval(engine)
    before = snapshot()
    response = Client().post(f"/console/approvals/{s['id']}/decide", {"decision": "approve"})
    assert response.status_code == 302 and response["Location"].startswith("/console/login/")
    assert snapshot() == before


def test_the_site_root_redirects_to_the_console(db):
    response = Client().get("/")
    assert (response.status_code, response["Location"]) == (302, "/console/")


def test_a_user_logs_in_with_the_form_and_lands_on_the_dashboard(alice):
    c = Client()
    assert "Sign in" in page(c, "/console/login/")
    response = c.post("/console/login/", {"username": "alice", "password": "pw"})
    assert (response.status_code, response["Location"]) == (302, "/console/")
    assert "Dashboard" in page(c, "/console/")


def test_a_wrong_password_stays_on_the_login_page(alice):
    response = Client().post("/console/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_signing_out_ends_the_session(as_alice):
    response = as_alice.post("/console/logout/")
    assert response.status_code == 302
    assert as_alice.get("/console/").status_code == 302


def test_a_decision_without_a_csrf_token_is_refused_and_writes_nothing(engine, alice):
    s = approval(engine)
    c = Client(enforce_csrf_checks=True)
    c.force_login(alice)
    before = snapshot()
    response = c.post(
        f"/console/approvals/{s['id']}/decide",
        {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"], "decision": "approve"},
    )
    assert response.status_code == 403
    assert snapshot() == before


def test_every_form_on_the_approval_page_carries_a_csrf_token(engine, alice):
    s = approval(engine)
    c = Client(enforce_csrf_checks=True)
    c.force_login(alice)
    html = page(c, f"/console/approvals/{s['id']}/")
    assert html.count('name="csrfmiddlewaretoken"') == html.count("<form")


def test_console_pages_forbid_framing(as_alice):
    assert as_alice.get("/console/")["X-Frame-Options"] == "DENY"


# -- dashboard ------------------------------------------------------------------------------


def test_the_dashboard_counts_runs_and_pauses_and_shows_what_expires_soon(engine, as_alice):
    soon = approval(engine, ttl_seconds=600)
    pause(engine, ttl_seconds=86400)
    html = page(as_alice, "/console/")
    assert 'href="/console/runs/?state=paused"' in html
    assert '<span class="stat-value">2</span>' in html  # two paused runs
    assert f'href="/console/approvals/{soon["id"]}/"' in html  # expires within the hour, decidable
    assert "Oldest pending approval" in html and "refund" in html
    assert 'class="chart-bar series-pauses"' in html


def test_the_dashboard_splits_pauses_waiting_for_a_person_from_approved_ones_waiting_for_the_engine(engine, as_alice):
    waiting, approved = approval(engine, ttl_seconds=600), approval(engine, ttl_seconds=600)
    pause(engine, ttl_seconds=86400)
    decide(as_alice, approved)
    response = as_alice.get("/console/")
    states = {s["state"]: s["n"] for s in response.context["states"]}
    pauses = {p["key"]: p["n"] for p in response.context["pauses"]}
    assert pauses == {"person": 1, "tool": 1, "reply": 0, "approved": 1, "resumed": 0}
    # The numbers add up: the paused runs are the pauses someone still has to answer.
    assert states["paused"] == pauses["person"] + pauses["tool"] + pauses["reply"] == 2
    assert states["running"] == pauses["approved"] + pauses["resumed"] == 1
    # What expires soon says what each pause waits for: the approved one is not offered for review.
    expiring = {row["id"]: row for row in response.context["expiring"]}
    assert expiring[waiting["id"]]["decidable"] and not expiring[waiting["id"]]["claimed"]
    assert expiring[approved["id"]]["waiting"] == "Approved, waiting for the engine"
    html = response.content.decode()
    assert f'href="/console/approvals/{approved["id"]}/"' not in html
    assert html.count('<span class="badge reason-approval">approval</span>') == 1


def test_the_dashboard_chart_counts_pauses_and_resumes_of_the_last_day(engine, as_alice):
    s = approval(engine)
    decide(as_alice, s)
    html = page(as_alice, "/console/")
    assert "Pauses <strong>1</strong>" in html
    assert "Resumes <strong>1</strong>" in html
    assert "Expiries <strong>0</strong>" in html


def test_the_dashboard_shows_only_the_users_scopes(engine, globex, as_alice):
    pause(globex)
    response = as_alice.get("/console/")
    assert [s["n"] for s in response.context["states"] + response.context["pauses"]] == [0] * 12


def test_a_user_without_memberships_is_told_there_is_nothing_to_show(db):
    c = Client()
    c.force_login(member("nobody", is_staff=True))
    assert "You have no memberships yet" in page(c, "/console/")


# -- inbox ------------------------------------------------------------------------------------


def test_the_inbox_lists_pending_approvals_soonest_deadline_first(engine, as_alice):
    later = approval(engine, ttl_seconds=7200)
    sooner = approval(engine, ttl_seconds=120)
    pause(engine)  # an external_tool pause is not an approval
    html = page(as_alice, "/console/approvals/")
    assert html.index(sooner["id"]) < html.index(later["id"])
    assert html.count('data-approval="') == 2
    assert "in 2 min" in html or "in 1 min" in html
    assert "agent-1" in html and "refund" in html and "acme" in html


def test_the_inbox_hides_approvals_already_decided(engine, as_alice):
    s = approval(engine)
    decide(as_alice, s)
    assert s["id"] not in page(as_alice, "/console/approvals/")


def test_the_inbox_filters_by_agent_tool_and_scope(engine, as_alice):
    refund = approval(engine, scope="acme/support")
    wire = approval(engine, pending=[call(name="wire_money")])
    by_tool = page(as_alice, "/console/approvals/?tool=wire_money")
    assert wire["id"] in by_tool and refund["id"] not in by_tool
    by_scope = page(as_alice, "/console/approvals/?scope=acme/support")
    assert refund["id"] in by_scope and wire["id"] not in by_scope
    assert "No pending approval matches" in page(as_alice, "/console/approvals/?agent_id=someone-else")


def test_the_inbox_filters_by_age_and_time_to_deadline(engine, as_alice):
    old = approval(engine, ttl_seconds=86400)
    urgent = approval(engine, ttl_seconds=200)
    Suspension.objects.filter(pk=old["id"]).update(created_at=timezone.now() - timedelta(hours=2))
    by_age = page(as_alice, "/console/approvals/?older_than=3600")
    assert old["id"] in by_age and urgent["id"] not in by_age
    by_deadline = page(as_alice, "/console/approvals/?expiring_within=300")
    assert urgent["id"] in by_deadline and old["id"] not in by_deadline


def test_the_inbox_pages_by_deadline_and_id_with_a_next_link_carrying_the_filters(engine, as_alice, settings):
    settings.CONSOLE_PAGE_SIZE = 2
    made = [approval(engine, ttl_seconds=600 + n) for n in range(5)]
    seen: list[str] = []
    url = "/console/approvals/?tool=refund"
    for _ in range(3):
        response = as_alice.get(url)
        seen += [r["id"] for r in response.context["rows"]]
        url = "/console/approvals/" + response.context["next_link"] if response.context["next_link"] else ""
        if url:
            assert "tool=refund" in url and "after=" in url
    assert seen == [s["id"] for s in made]
    assert url == ""


def test_a_malformed_inbox_cursor_shows_the_first_page(engine, as_alice):
    s = approval(engine)
    for cursor in ["nonsense", "0001-01-01T00:00:00+05:00~" + s["id"], "2020-01-01T00:00:00~x"]:
        assert s["id"] in page(as_alice, f"/console/approvals/?after={cursor}")


@pytest.mark.parametrize(
    "query",
    [
        "/console/runs/?created_after=0001-01-01T00:00:00%2B05:00",
        "/console/runs/?state=bogus&after=zzz&scope=ACME",
        "/console/approvals/?expiring_within=1e400&older_than=-1",
        "/console/approvals/?expiring_within=NaN&scope=../x",
    ],
)
def test_odd_filter_and_cursor_values_never_break_a_list(as_alice, query):
    assert as_alice.get(query).status_code == 200


@pytest.mark.parametrize(
    "tampered",
    [{"run_revision": str(10**30)}, {"run_id": "not-a-uuid"}, {"run_revision": "0"}, {"decision": "maybe"}],
)
def test_a_tampered_decision_form_is_a_message_and_writes_nothing(engine, as_alice, tampered):
    s = approval(engine)
    form = {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"], "decision": "approve"}
    before = snapshot()
    response = as_alice.post(f"/console/approvals/{s['id']}/decide", {**form, **tampered}, follow=True)
    assert response.status_code == 200 and "message-error" in response.content.decode()
    assert snapshot() == before


def test_an_invalid_filter_value_is_reported_not_an_error(engine, as_alice):
    approval(engine)
    html = page(as_alice, "/console/approvals/?older_than=abc")
    assert "older_than" in html and "notice-error" in html


def test_the_inbox_shows_no_approval_of_another_scope(engine, globex, as_alice):
    mine, theirs = approval(engine), approval(globex)
    html = page(as_alice, "/console/approvals/")
    assert mine["id"] in html and theirs["id"] not in html


def test_a_superuser_sees_every_scope(engine, globex):
    c = Client()
    c.force_login(member("root", is_superuser=True, is_staff=True))
    mine, theirs = approval(engine), approval(globex)
    html = page(c, "/console/approvals/")
    assert mine["id"] in html and theirs["id"] in html


# -- approval detail ---------------------------------------------------------------------------


def test_the_approval_page_shows_calls_conversation_prompt_config_deadline_and_timeline(engine, as_alice):
    s = approval(engine, ttl_seconds=600, pending=[call(arguments='{"amount": 900, "to": "ACME"}')])
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    assert "refund" in html
    assert "{\n  &quot;amount&quot;: 900,\n  &quot;to&quot;: &quot;ACME&quot;\n}" in html  # indent=2
    assert "Loaded history" in html and "This run's new messages start at message 2" in html
    assert html.index("history") < html.index("This run's new messages") < html.index("please refund")
    assert '<details class="prompt">' in html and "You are careful." in html
    assert "m-1" in html and "Step budget" in html and "step 2 of 10" in html
    assert "in 10 min" in html or "in 9 min" in html
    assert "suspended" in html and "token:engine" in html
    assert f'name="run_revision" value="{s["run_revision"]}"' in html
    assert f'name="suspension_id" value="{s["id"]}"' in html


def test_untrusted_text_is_escaped_on_every_page(engine, as_alice):
    cont = continuation(
        system_prompt=f"prompt {XSS}",
        messages=[{"role": "user", "content": f"message {XSS}"}],
        new_messages_from=0,
        config={"model": XSS, "tools": [XSS]},
    )
    s = approval(engine, pending=[call(name=XSS, arguments=f'{{"note": "{XSS}"}}')], cont=cont)
    for url in ["/console/", "/console/approvals/", f"/console/approvals/{s['id']}/", f"/console/runs/{s['run_id']}/"]:
        html = page(as_alice, url)
        assert "<script>alert" not in html, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url


def test_a_denial_reason_is_escaped_in_the_message_and_on_the_run_page(engine, as_alice):
    s = approval(engine)
    html = decide(as_alice, s, "deny", reason=XSS).content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    assert "<script>alert" not in html and "&lt;script&gt;" in html


def test_an_approval_of_another_scope_is_a_404_to_read_and_to_decide(engine, globex, as_alice):
    s = approval(globex)
    assert as_alice.get(f"/console/approvals/{s['id']}/").status_code == 404
    before = snapshot()
    assert decide(as_alice, s).status_code == 404
    assert snapshot() == before


def test_a_member_without_approver_or_auditor_role_cannot_see_approvals(engine):
    c = Client()
    c.force_login(member("eng", {"acme": ["engine"]}, is_staff=True))
    s = approval(engine)
    assert c.get(f"/console/approvals/{s['id']}/").status_code == 404
    assert s["id"] not in page(c, "/console/approvals/")


def test_an_auditor_reads_an_approval_but_gets_no_decision_form(engine):
    c = Client()
    c.force_login(member("audrey", {"acme": ["auditor"]}, is_staff=True))
    s = approval(engine)
    html = page(c, f"/console/approvals/{s['id']}/")
    assert "only an approver in" in html and "approve-form" not in html


def test_an_auditor_posting_a_decision_is_refused_with_a_message_and_nothing_is_written(engine):
    c = Client()
    c.force_login(member("audrey", {"acme": ["auditor"]}, is_staff=True))
    s = approval(engine)
    before = snapshot()
    html = decide(c, s).content.decode()
    assert "You do not hold the approver role" in html
    assert snapshot() == before


# -- decisions ------------------------------------------------------------------------------------


def test_approving_admits_the_decision_as_the_logged_in_user_and_returns_to_the_emptied_inbox(engine, as_alice):
    s = approval(engine)
    response = decide(as_alice, s, reason="looks right")
    assert response.redirect_chain[-1][0] == "/console/approvals/"
    html = response.content.decode()
    assert "Approved. The run is running at revision 3" in html and "No other approval waits for you." in html
    assert Run.objects.get(pk=s["run_id"]).state == "running"
    admission = Admission.objects.get(suspension_id=s["id"])
    assert (admission.actor, admission.source, admission.state) == ("user:alice", "approval", "admitted")
    assert Event.objects.get(run_id=s["run_id"], kind="admitted").actor == "user:alice"
    assert Approval.objects.get(pk=s["id"]).decided_by == "user:alice"


def test_the_approver_is_never_taken_from_the_form(engine, as_alice):
    s = approval(engine)
    as_alice.post(
        f"/console/approvals/{s['id']}/decide",
        {
            "run_id": s["run_id"],
            "suspension_id": s["id"],
            "run_revision": s["run_revision"],
            "decision": "approve",
            "actor": "user:mallory",
            "approver": "user:mallory",
        },
    )
    assert Admission.objects.get(suspension_id=s["id"]).actor == "user:alice"


def test_denying_fails_the_run_with_the_reason(engine, as_alice):
    s = approval(engine)
    html = decide(as_alice, s, "deny", reason="over the limit").content.decode()
    assert "Denied. The run failed with “rejected: over the limit”." in html
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.error) == ("failed", "rejected: over the limit")
    assert Event.objects.get(run_id=s["run_id"], kind="denied").actor == "user:alice"


def test_a_denial_without_a_reason_is_refused_and_writes_nothing(engine, as_alice):
    s = approval(engine)
    before = snapshot()
    html = decide(as_alice, s, "deny", reason="   ").content.decode()
    assert "A denial needs a reason." in html
    assert snapshot() == before


def test_the_same_approvers_second_click_changes_nothing(engine, as_alice):
    s = approval(engine)
    decide(as_alice, s)
    before = snapshot()
    html = decide(as_alice, s).content.decode()
    assert "You had already approved this; nothing changed." in html
    assert snapshot() == before


def test_a_second_approver_loses_to_the_first_with_a_clear_message(engine, as_alice):
    s = approval(engine)
    bob = Client()
    bob.force_login(member("bob", {"acme": ["approver"]}, is_staff=True))
    decide(bob, s)
    before = snapshot()
    response = decide(as_alice, s)
    assert response.status_code == 200
    assert "Another approver already approved it." in response.content.decode()
    assert snapshot() == before


def test_approving_after_someone_denied_says_it_was_already_decided(engine, as_alice):
    s = approval(engine)
    bob = Client()
    bob.force_login(member("bob", {"acme": ["approver"]}, is_staff=True))
    decide(bob, s, "deny", reason="no")
    before = snapshot()
    html = decide(as_alice, s).content.decode()
    assert "Someone else already decided this approval." in html
    assert "Denied by <strong>user:bob</strong>" in html
    assert snapshot() == before


def test_denying_after_someone_approved_says_it_was_already_decided(engine, as_alice):
    s = approval(engine)
    bob = Client()
    bob.force_login(member("bob", {"acme": ["approver"]}, is_staff=True))
    decide(bob, s)
    before = snapshot()
    assert "Someone else already decided this approval." in decide(as_alice, s, "deny", "no").content.decode()
    assert snapshot() == before


def test_a_stale_page_never_decides_the_runs_later_pause(engine, as_alice):
    first = approval(engine)
    stale = page(as_alice, f"/console/approvals/{first['id']}/")
    assert f'value="{first["run_revision"]}"' in stale
    bob = Client()
    bob.force_login(member("bob", {"acme": ["approver"]}, is_staff=True))
    decide(bob, first)
    run = start(engine, first)
    second = post(
        engine,
        f"/api/v1/runs/{first['run_id']}/suspend",
        {"revision": run["run_revision"], "reason": "approval", "pending": [call()], "continuation": continuation()},
    ).json()
    before = snapshot()
    html = decide(as_alice, first).content.decode()
    assert "The run moved on since you opened this page." in html
    assert snapshot() == before
    assert Approval.objects.get(pk=second["id"]).status == "pending"


def test_a_form_whose_version_names_another_pause_is_refused(engine, as_alice):
    s, other = approval(engine), approval(engine)
    before = snapshot()
    html = decide(as_alice, s, suspension_id=other["id"]).content.decode()
    assert "This form does not belong to this approval" in html
    assert snapshot() == before


def test_an_approval_past_its_deadline_cannot_be_decided_and_says_so(engine, as_alice):
    s = approval(engine, ttl_seconds=60)
    Suspension.objects.filter(pk=s["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    before = snapshot()
    html = decide(as_alice, s).content.decode()
    assert "This approval expired before your decision." in html
    assert "It can no longer be decided." in html
    assert snapshot() == before


def test_a_decided_approval_page_says_who_decided_it(engine, as_alice):
    s = approval(engine)
    decide(as_alice, s, reason="fine")
    html = page(as_alice, f"/console/approvals/{s['id']}/")
    assert "Approved by <strong>user:alice</strong>" in html and "approve-form" not in html


# -- runs -------------------------------------------------------------------------------------------


def test_the_run_list_filters_by_state_and_hides_other_scopes(engine, globex, as_alice):
    paused, theirs = approval(engine), approval(globex)
    decided = approval(engine)
    decide(as_alice, decided, "deny", "no")
    failed = as_alice.get("/console/runs/?state=failed").context["rows"]
    assert [r["id"] for r in failed] == [decided["run_id"]]
    listed = {r["id"] for r in as_alice.get("/console/runs/").context["rows"]}
    assert listed == {paused["run_id"], decided["run_id"]}
    assert theirs["run_id"] not in listed
    assert f'href="/console/approvals/{paused["id"]}/">Review' in page(as_alice, "/console/runs/?state=paused")


def test_the_run_list_pages_newest_first(engine, as_alice, settings):
    settings.CONSOLE_PAGE_SIZE = 2
    made = [approval(engine)["run_id"] for _ in range(3)]
    first = as_alice.get("/console/runs/")
    second = as_alice.get("/console/runs/" + first.context["next_link"])
    assert [r["id"] for r in first.context["rows"] + second.context["rows"]] == made[::-1]
    assert second.context["next_link"] == ""


def test_the_run_page_shows_timeline_receipts_and_the_current_pause(engine, as_alice):
    s = approval(engine)
    html = page(as_alice, f"/console/runs/{s['run_id']}/")
    assert 'id="current-pause"' in html and "Review approval" in html
    decide(as_alice, s)
    start(engine, s)
    html = page(as_alice, f"/console/runs/{s['run_id']}/")
    admission = Admission.objects.get(suspension_id=s["id"])
    assert admission.request_digest in html
    assert "No start." not in html
    for kind in ("registered", "suspended", "admitted", "started"):
        assert f"kind-{kind}" in html


def test_a_run_of_another_scope_is_a_404_that_names_nothing(globex, as_alice):
    s = approval(globex)
    response = as_alice.get(f"/console/runs/{s['run_id']}/")
    assert response.status_code == 404
    assert (
        "outside the scopes you can see" in response.content.decode() and s["run_id"] not in response.content.decode()
    )


# -- uncertain starts ---------------------------------------------------------------------------------


def test_uncertain_starts_lists_started_unfinished_runs_with_their_digests(engine, globex, as_alice):
    s = approval(engine)
    decide(as_alice, s)
    started = start(engine, s)
    waiting = approval(engine)
    decide(as_alice, waiting)  # admitted, never started: not uncertain
    other = approval(globex)
    html = page(as_alice, "/console/uncertain/?recent=1")
    admission = Admission.objects.get(suspension_id=s["id"])
    assert f'id="close-{s["run_id"]}"' in html
    assert admission.request_digest in html and started["start"]["digest"] in html
    assert waiting["run_id"] not in html and other["run_id"] not in html


def test_a_completed_run_is_no_longer_uncertain(engine, as_alice):
    s = approval(engine)
    decide(as_alice, s)
    started = start(engine, s)
    post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": started["run_revision"]})
    assert f'id="close-{s["run_id"]}"' not in page(as_alice, "/console/uncertain/?recent=1")


# -- the runs page filters like the inbox (issue 38) ----------------------------------------------


def test_the_run_list_matches_part_of_an_agent_name_in_any_case(engine, as_alice):
    infra, other = pause(engine, agent_id="infra-agent"), pause(engine, agent_id="refund-agent")
    listed = [r["id"] for r in as_alice.get("/console/runs/?agent_id=INFRA").context["rows"]]
    assert listed == [infra["run_id"]] and other["run_id"] not in listed
    # The API's filter stays exact (docs/api.md §9): a script names what it means.
    assert client_rows(engine, "agent_id=INFRA") == [] and client_rows(engine, "agent_id=infra-agent") == [
        infra["run_id"]
    ]


@pytest.mark.parametrize(
    "spelling", [str, lambda u: str(u).upper(), lambda u: u.hex, lambda u: f"{{{u}}}", lambda u: f"urn:uuid:{u}"]
)
def test_the_run_list_finds_a_run_by_its_id_in_any_spelling(engine, as_alice, spelling):
    wanted, _ = pause(engine), pause(engine)
    response = as_alice.get("/console/runs/", {"q": f" {spelling(UUID(wanted['run_id']))} "})
    assert [r["id"] for r in response.context["rows"]] == [wanted["run_id"]]
    assert response.context["filters"]["q"].strip() == spelling(UUID(wanted["run_id"]))


def test_a_run_id_that_is_not_one_is_an_error_and_lists_nothing(engine, as_alice):
    pause(engine)
    response = as_alice.get("/console/runs/?q=not-a-run")
    assert response.status_code == 200 and response.context["rows"] == []
    assert "Enter a whole run id" in response.content.decode()


def client_rows(c, query):
    response = c.get(f"/api/v1/runs?{query}")
    assert response.status_code == 200, response.content
    return [r["id"] for r in response.json()["results"]]
