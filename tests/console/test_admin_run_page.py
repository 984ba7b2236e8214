"""The auditor's run page in Django admin (docs/decisions.md, "The run's admin page"): the whole history, scoped, in
fixed queries."""

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from suspensions.admin.history import SECTION_LIMIT
from suspensions.models import (
    Admission,
    Approval,
    ApprovalVote,
    Event,
    OutboxEvent,
    Start,
    Suspension,
    WebhookMessage,
)
from tests.helpers import member
from tests.run_history import paused_for_approval, rich_run


def signed_in(username, grants=None, **flags):
    c = Client()
    c.force_login(member(username, grants, is_staff=True, **flags))
    return c


@pytest.fixture
def auditor(db):
    return signed_in("audrey", {"acme": ["auditor"]})


def page_of(c, run_id):
    response = c.get(reverse("admin:suspensions_run_change", args=[run_id]))
    assert response.status_code == 200
    return response.content.decode()


def section(html, name):
    """The HTML of one history section of the page."""
    match = re.search(rf'<div class="module history-section" id="history-{name}">(.*?)\n</div>', html, re.S)
    assert match, f"no {name} section"
    return match.group(1)


def test_the_run_page_shows_every_table_of_the_runs_history_with_links_to_each_row(auditor):
    run = rich_run()
    html = page_of(auditor, run.id)
    votes = section(html, "approvals")
    for vote in ApprovalVote.objects.filter(run_id=run.id):
        assert reverse("admin:suspensions_approvalvote_change", args=[vote.id]) in votes
    assert "user:alice" in votes and "user:bob" in votes and "approved" in votes
    admission = Admission.objects.get(run_id=run.id)
    assert reverse("admin:suspensions_admission_change", args=[admission.id]) in section(html, "admissions")
    start = Start.objects.get(run_id=run.id)
    assert start.digest in section(html, "starts")
    pause = section(html, "pause")
    assert reverse("admin:suspensions_suspension_change", args=[Suspension.objects.get(run=run).id]) in pause
    messages = section(html, "messages")
    delivered = WebhookMessage.objects.get(run_id=run.id, status="delivered")
    assert reverse("admin:suspensions_webhookmessage_change", args=[delivered.id]) in messages
    assert re.search(r"<td>delivered</td><td>2</td>", messages)
    events = section(html, "events")
    assert [int(n) for n in re.findall(r'/admin/suspensions/event/(\d+)/change/">', events)] == list(
        Event.objects.filter(run_id=run.id).order_by("id").values_list("id", flat=True)
    )


def test_the_run_page_and_the_console_run_page_link_to_each_other(auditor):
    run = rich_run()
    console_url = reverse("console:run", args=[run.id])
    admin_url = reverse("admin:suspensions_run_change", args=[run.id])
    assert f'href="{console_url}"' in page_of(auditor, run.id)
    console = auditor.get(console_url).content.decode()
    assert f'href="{admin_url}"' in console


def test_a_signed_in_user_without_staff_status_sees_no_admin_link_on_the_console(db):
    run = rich_run()
    c = Client()
    c.force_login(member("nina", {"acme": ["auditor"]}))
    response = c.get(reverse("console:run", args=[run.id]))
    assert response.status_code == 403
    assert reverse("admin:suspensions_run_change", args=[run.id]) not in response.content.decode()


def test_each_related_rows_admin_page_links_back_to_the_run_page(auditor):
    run = rich_run()
    back = f'href="{reverse("admin:suspensions_run_change", args=[run.id])}"'
    rows = [
        ("admission", Admission.objects.get(run_id=run.id).id),
        ("start", Start.objects.get(run_id=run.id).id),
        ("approval", Approval.objects.get(run_id=run.id).suspension_id),
        ("approvalvote", ApprovalVote.objects.filter(run_id=run.id).first().id),
        ("event", Event.objects.filter(run_id=run.id).first().id),
        ("webhookmessage", WebhookMessage.objects.filter(run_id=run.id).first().id),
        ("outboxevent", OutboxEvent.objects.filter(run_id=run.id).first().id),
        ("suspension", Suspension.objects.get(run=run).id),
    ]
    for model, pk in rows:
        html = auditor.get(reverse(f"admin:suspensions_{model}_change", args=[pk])).content.decode()
        assert back in html, model


def test_the_page_reads_the_same_number_of_queries_for_a_bare_run_and_a_rich_one(
    auditor, django_assert_max_num_queries
):
    bare = paused_for_approval()
    rich = rich_run()
    counts = []
    for run_id in (bare.run_id, rich.id):
        with CaptureQueriesContext(connection) as queries:
            page_of(auditor, run_id)
        counts.append(len(queries))
    assert counts[0] == counts[1]
    # Session, user, memberships (twice: the object, then the history), the run, nine history tables, content types,
    # and the verdict's two (the run's chain, the checkpoints that sealed it).
    with django_assert_max_num_queries(18):
        page_of(auditor, rich.id)


def test_a_scoped_admin_sees_nothing_of_another_tenants_run(db):
    run = rich_run(scope="acme/payments")
    outsider = signed_in("gina", {"globex": ["auditor", "operator"]})
    response = outsider.get(reverse("admin:suspensions_run_change", args=[run.id]))
    # The admin answers an id outside the user's scopes like a missing one: back to the index.
    assert response.status_code == 302 and response.url == reverse("admin:index")
    for model in ("event", "admission", "approvalvote", "webhookmessage"):
        listing = outsider.get(reverse(f"admin:suspensions_{model}_changelist") + f"?run_id={run.id}")
        assert not listing.context["cl"].result_list, model


def test_rows_of_another_scope_that_name_the_run_are_left_out_of_its_page(db):
    run = rich_run(scope="acme/payments")
    forged = Event(run_id=run.id, kind="forged", actor="token:mallory", revision=99, data={}, at=timezone.now())
    forged.stamp_scope("globex")
    forged.save(force_insert=True)
    payments = signed_in("paula", {"acme/payments": ["auditor"]})
    assert "forged" not in section(page_of(payments, run.id), "events")
    root = signed_in("root", is_superuser=True)
    assert "forged" in section(page_of(root, run.id), "events")


def test_json_is_indented_and_escaped_and_tool_names_are_a_list(auditor):
    run = paused_for_approval().run
    html = page_of(auditor, run.id)
    pending = re.search(r'<pre class="json" id="pause-pending">(.*?)</pre>', html, re.S).group(1)
    assert pending.startswith("[\n  {\n    &quot;arguments&quot;: ")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pending and "<script>alert" not in html
    assert re.search(
        r'<ul class="tool-names"><li class="mono">wire_transfer</li><li class="mono">notify_customer</li>', html
    )
    suspension = auditor.get(reverse("admin:suspensions_suspension_change", args=[run.suspension.id])).content.decode()
    assert ",wire_transfer," not in suspension and "<li>wire_transfer</li><li>notify_customer</li>" in suspension
    assert '<pre class="json">[\n  {\n    &quot;arguments&quot;: ' in suspension
    event = Event.objects.filter(run_id=run.id, kind="suspended").first()
    event_page = auditor.get(reverse("admin:suspensions_event_change", args=[event.id])).content.decode()
    assert '<pre class="json">' + json.dumps(event.data, indent=2).replace('"', "&quot;")[:40] in event_page


def test_the_verify_block_shows_the_runs_chain_verdict_and_names_an_edited_event(auditor):
    run = paused_for_approval().run
    verify = section(page_of(auditor, run.id), "verify")
    assert "The audit chain of this run verifies." in verify and "NOT" not in verify
    edited = Event.objects.filter(run_id=run.id).order_by("id").last()
    Event.objects.filter(pk=edited.pk).update(data={"edited": True})  # as someone with database access would
    verify = section(page_of(auditor, run.id), "verify")
    assert "The audit chain of this run does NOT verify." in verify and str(edited.id) in verify


def test_the_all_events_link_of_a_long_history_lists_only_that_runs_events(auditor):
    run = rich_run()
    other = paused_for_approval()
    listing = auditor.get(reverse("admin:suspensions_event_changelist") + f"?run_id={run.id}").content.decode()
    assert str(run.id) in listing and str(other.run_id) not in listing


def test_past_the_cap_the_events_section_shows_the_first_ones_and_links_to_the_runs_full_list(auditor):
    run = paused_for_approval().run
    now = timezone.now()
    extra = []
    for n in range(SECTION_LIMIT):
        e = Event(run_id=run.id, kind="noted", actor="token:engine", revision=2, data={"n": n}, at=now)
        e.stamp_scope(run.scope)
        extra.append(e)
    Event.objects.bulk_create(extra)
    events = section(page_of(auditor, run.id), "events")
    assert len(re.findall(r'/admin/suspensions/event/\d+/change/">', events)) == SECTION_LIMIT
    link = reverse("admin:suspensions_event_changelist") + f"?run_id={run.id}"
    assert f'Only the first {SECTION_LIMIT} are shown: <a href="{link}">' in events
