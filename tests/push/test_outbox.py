"""The outbox (docs/api.md, "8. Push: webhooks"): which transitions announce what, in their own transaction, and the
fan-out by scope."""

import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import OutboxEvent, WebhookEndpoint, WebhookMessage
from suspensions.services import announce, outbox
from tests.factories import principal
from tests.helpers import call, continuation

from .conftest import make_endpoint

pytestmark = pytest.mark.django_db


SECRET_MARK = "You are careful."  # in every continuation the helpers build: must never leave in a webhook


def paused(scope="acme", reason="approval", ttl=3600, agent="agent-7"):
    engine = principal("token:engine", scope)
    run = services.register_run(principal=engine, agent_id=agent, scope=scope)
    pending = [call("c1", "refund"), call("c2", "notify", '{"to": "ann"}')]
    if reason == "agent_reply":
        pending = [call("c1", "refund", reply_with="q-1")]
    return services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=1,
        reason=reason,
        pending=pending,
        continuation=continuation(),
        ttl_seconds=ttl,
    )


def version(s):
    return services.Version(run_id=s.run_id, suspension_id=s.id, run_revision=s.run.revision)


def types():
    return list(OutboxEvent.objects.order_by("id").values_list("type", flat=True))


def test_an_approval_pause_announces_approval_requested_with_agent_tools_and_deadline():
    s = paused(scope="acme/support")
    event = OutboxEvent.objects.get()
    assert event.type == "approval.requested"
    assert (event.scope, event.scope_l1, event.run_id) == ("acme/support", "acme", s.run_id)
    assert event.data == {
        "run_id": str(s.run_id),
        "suspension_id": str(s.id),
        "scope": "acme/support",
        "state": "paused",
        "revision": 2,
        "reason": "approval",
        "agent_id": "agent-7",
        "tools": ["refund", "notify"],
        "deadline": s.expires_at.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "requested_by": "token:engine",
    }


def test_an_external_tool_pause_and_its_one_shot_resume_announce_nothing():
    s = paused(reason="external_tool")
    services.resume_run(
        principal=principal(),
        run_id=s.run_id,
        version=version(s),
        results=[{"call_id": "c1", "content": "ok"}, {"call_id": "c2", "content": "ok"}],
    )
    assert types() == []


def test_an_approval_announces_the_decision_with_its_decider_and_the_work_ready_to_start():
    s = paused()
    services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s), note="fine")
    decided, created = OutboxEvent.objects.order_by("id")[1:]
    assert (decided.type, decided.data["decision"], decided.data["decided_by"]) == (
        "approval.decided",
        "approve",
        "user:alice",
    )
    assert created.type == "admission.created"
    assert created.data["source"] == "approval" and created.data["state"] == "running"
    assert set(created.data) >= {"run_id", "suspension_id", "admission_id", "request_digest", "revision"}
    # The admitted input (the approver's note is in it) never leaves.
    assert "fine" not in json.dumps(created.data) + json.dumps(decided.data)


def test_an_agent_reply_admission_announces_work_ready_to_start():
    s = paused(reason="agent_reply")
    services.admit_reply(
        principal=principal("token:bus"), run_id=s.run_id, version=version(s), input='"secret answer"', reply_with="q-1"
    )
    assert types() == ["admission.created"]
    assert "secret answer" not in json.dumps(OutboxEvent.objects.get().data)


def test_a_denial_announces_the_decision_and_the_finished_run():
    s = paused()
    services.deny_approval(principal=principal("user:bob"), suspension_id=s.id, version=version(s), reason="no")
    assert types() == ["approval.requested", "approval.decided", "run.finished"]
    decided, finished = OutboxEvent.objects.order_by("id")[1:]
    assert (decided.data["decision"], decided.data["decided_by"]) == ("deny", "user:bob")
    assert finished.data["state"] == "failed"


def test_completing_failing_and_cancelling_announce_run_finished_with_the_state():
    engine = principal()
    states = []
    for finish in ("complete", "fail", "cancel"):
        run = services.register_run(principal=engine, agent_id="a", scope="acme")
        if finish == "complete":
            services.complete_run(principal=engine, run_id=run.id, revision=1)
        elif finish == "fail":
            services.fail_run(principal=engine, run_id=run.id, revision=1, error="api key sk-123 rejected")
        else:
            services.cancel_run(principal=engine, run_id=run.id, revision=1)
        states.append(OutboxEvent.objects.get(run_id=run.id).data["state"])
    assert states == ["completed", "failed", "cancelled"]
    assert "sk-123" not in json.dumps(list(OutboxEvent.objects.values_list("data", flat=True)))


def test_the_sweep_announces_each_expired_pause_with_one_insert_per_batch():
    first, second = paused(ttl=60), paused(ttl=60, reason="external_tool")
    with CaptureQueriesContext(connection) as queries:
        services.expire_suspensions(now=db_now() + timedelta(minutes=5))
    expired = OutboxEvent.objects.filter(type="suspension.expired").order_by("id")
    assert sorted(e.data["suspension_id"] for e in expired) == sorted([str(first.id), str(second.id)])
    assert {(e.data["state"], e.data["revision"], e.scope) for e in expired} == {("expired", 3, "acme")}
    # On PostgreSQL a batch's statements go in one round trip: count the statements, not the round trips.
    assert "".join(q["sql"] for q in queries.captured_queries).count("INSERT INTO suspensions_outboxevent") == 1


def test_a_rolled_back_transition_leaves_no_outbox_row_and_enqueues_nothing(django_capture_on_commit_callbacks):
    make_endpoint("acme")
    with django_capture_on_commit_callbacks() as enqueued:
        with pytest.raises(RuntimeError), transaction.atomic():
            paused()
            raise RuntimeError("the caller's transaction fails after the suspend")
    assert (OutboxEvent.objects.count(), WebhookMessage.objects.count(), enqueued) == (0, 0, [])


def test_without_a_window_each_committed_transition_enqueues_its_own_fan_out_task_at_its_commit(
    django_capture_on_commit_callbacks, monkeypatch, settings
):
    settings.FAN_OUT_WINDOW_MS = 0
    sent = []
    monkeypatch.setattr(outbox.current_app, "send_task", lambda name, args, countdown: sent.append((name, args)))
    with django_capture_on_commit_callbacks(execute=True):
        s = paused()
        services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    ids = list(OutboxEvent.objects.order_by("id").values_list("id", flat=True))
    assert sent == [(outbox.FAN_OUT_TASK, [ids[:1]]), (outbox.FAN_OUT_TASK, [ids[1:]])]


def test_transitions_committed_within_the_window_wake_the_fan_out_with_one_task_carrying_all_their_ids(
    django_capture_on_commit_callbacks, monkeypatch, settings
):
    settings.FAN_OUT_WINDOW_MS = 60_000  # a window no test waits out: the flush sends what waits
    sent = []
    monkeypatch.setattr(outbox.current_app, "send_task", lambda name, args, countdown: sent.append((name, args)))
    outbox.WAKEUPS.flush()  # a send just ended: the window is running
    with django_capture_on_commit_callbacks(execute=True):
        s = paused()
        services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    assert sent == []  # committed, waiting for the window
    outbox.WAKEUPS.flush()
    ids = list(OutboxEvent.objects.order_by("id").values_list("id", flat=True))
    assert len(ids) == 3 and sent == [(outbox.FAN_OUT_TASK, [ids])]


def outbox_inserts(queries):
    """The outbox INSERTs sent, counted inside a transition's writes (sent together, in one round trip)."""
    return [
        s
        for q in queries.captured_queries
        for s in q["sql"].split("; ")
        if s.startswith("INSERT INTO suspensions_outboxevent")
    ]


def test_a_transitions_outbox_rows_cost_one_insert_and_no_extra_round_trip(monkeypatch):
    engine = principal()
    runs = [services.register_run(principal=engine, agent_id="a", scope="acme") for _ in range(2)]

    def suspend(run):
        with CaptureQueriesContext(connection) as queries:
            services.suspend_run(
                principal=engine,
                run_id=run.id,
                revision=1,
                reason="approval",
                pending=[call()],
                continuation=continuation(),
            )
        return queries

    announced = suspend(runs[0])
    with monkeypatch.context() as m:
        m.setattr(announce, "announced", lambda row, extra: iter(()))
        silent = suspend(runs[1])
    assert len(outbox_inserts(announced)) == 1 and outbox_inserts(silent) == []
    # The outbox rows go with the transition's other writes: no extra round trip.
    assert len(announced.captured_queries) == len(silent.captured_queries)


def test_an_approval_writes_its_two_outbox_rows_with_one_statement():
    s = paused()
    with CaptureQueriesContext(connection) as queries:
        services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    assert len(outbox_inserts(queries)) == 1
    assert types() == ["approval.requested", "approval.decided", "admission.created"]


# -- fan-out -------------------------------------------------------------------------------------


def test_an_endpoint_receives_its_scope_and_every_scope_below_it_but_nothing_beside_it(monkeypatch):
    monkeypatch.setattr(outbox, "enqueue_delivery", lambda ids, countdown=None: None)
    workspace, support = make_endpoint("acme"), make_endpoint("acme/support")
    make_endpoint("acme/sales", active=False)
    make_endpoint("globex")
    on_support, on_sales = paused(scope="acme/support"), paused(scope="acme/sales")
    outbox.fan_out()
    got = set(WebhookMessage.objects.values_list("endpoint_id", "run_id"))
    assert got == {(workspace.id, on_support.run_id), (workspace.id, on_sales.run_id), (support.id, on_support.run_id)}
    assert not OutboxEvent.objects.filter(dispatched_at__isnull=True).exists()


def test_an_endpoint_with_event_types_gets_only_those_types(monkeypatch):
    monkeypatch.setattr(outbox, "enqueue_delivery", lambda ids, countdown=None: None)
    only_decisions = make_endpoint("acme", event_types=["approval.decided"])
    s = paused()
    services.deny_approval(principal=principal("user:bob"), suspension_id=s.id, version=version(s), reason="no")
    outbox.fan_out()
    assert list(WebhookMessage.objects.values_list("endpoint_id", "type")) == [(only_decisions.id, "approval.decided")]


def test_the_message_body_is_the_event_as_canonical_json_without_continuation_or_input(monkeypatch):
    monkeypatch.setattr(outbox, "enqueue_delivery", lambda ids, countdown=None: None)
    make_endpoint("acme")
    s = paused()
    outbox.fan_out()
    message = WebhookMessage.objects.get()
    body = json.loads(message.body)
    assert set(body) == {"type", "timestamp", "data"}
    assert (body["type"], body["data"]["suspension_id"]) == ("approval.requested", str(s.id))
    assert message.body == json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert SECRET_MARK not in message.body and '"amount"' not in message.body


def test_a_slack_endpoint_gets_a_readable_text_with_agent_tools_deadline_and_console_link(monkeypatch, settings):
    settings.CONSOLE_BASE_URL = "https://susp.example.com"
    monkeypatch.setattr(outbox, "enqueue_delivery", lambda ids, countdown=None: None)
    make_endpoint("acme", format="slack")
    s = paused(agent="<@U123> refund-bot")
    outbox.fan_out()
    text = json.loads(WebhookMessage.objects.get().body)["text"]
    assert "&lt;@U123&gt; refund-bot" in text and "refund, notify" in text
    assert s.expires_at.strftime("%Y-%m-%dT%H:%M") in text
    assert f"<https://susp.example.com/console/approvals/{s.id}/|Approve or deny>" in text


def test_an_event_waits_behind_an_earlier_undispatched_event_of_its_run(monkeypatch):
    deferred = []
    make_endpoint("acme")
    s = paused()
    services.deny_approval(principal=principal("user:bob"), suspension_id=s.id, version=version(s), reason="no")
    monkeypatch.setattr(outbox, "enqueue_delivery", lambda ids, countdown=None: None)
    monkeypatch.setattr(outbox, "enqueue_fan_out", lambda ids, countdown=None: deferred.append(ids))
    requested, decided, finished = OutboxEvent.objects.order_by("id")
    result = outbox.fan_out(ids=[decided.id, finished.id])
    assert (result.dispatched, result.deferred, deferred) == (
        [],
        [decided.id, finished.id],
        [[decided.id, finished.id]],
    )
    outbox.fan_out(ids=[requested.id])
    outbox.fan_out(ids=[decided.id, finished.id])
    assert list(WebhookMessage.objects.order_by("event_id").values_list("type", flat=True)) == types()


def test_the_fan_out_writes_the_approver_notifications_with_the_webhook_messages(monkeypatch):
    from suspensions.models import Notification
    from tests.helpers import member

    monkeypatch.setattr(outbox, "enqueue_delivery", lambda ids, countdown=None: None)
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    make_endpoint("acme")
    s = paused()
    assert not Notification.objects.exists()
    outbox.fan_out()
    rows = list(Notification.objects.values_list("approval_id", "channel", "kind", "recipient", "status"))
    assert rows == [(s.id, "email", "request", "alice@example.com", "pending")]
    assert WebhookMessage.objects.count() == 1


def test_the_beat_fans_out_only_events_whose_task_is_overdue(monkeypatch):
    monkeypatch.setattr(outbox, "enqueue_delivery", lambda ids, countdown=None: None)
    paused()
    assert outbox.fan_out_lost(older_than=timedelta(minutes=5)) == 0
    OutboxEvent.objects.update(created_at=db_now() - timedelta(minutes=10))
    assert outbox.fan_out_lost(older_than=timedelta(minutes=5)) == 1
    assert WebhookEndpoint.objects.count() == 0 and WebhookMessage.objects.count() == 0


def test_the_beats_pass_stops_after_the_batch_that_outlasts_one_beat_and_leaves_the_rest_to_the_next(
    monkeypatch, settings
):
    from suspensions import tasks

    monkeypatch.setattr(outbox, "enqueue_delivery", lambda ids, countdown=None: None)
    settings.WEBHOOK_SWEEP_SECONDS = 0  # every batch outlasts the beat
    written = db_now() - timedelta(minutes=1)  # their fan-out task was lost: the beat's to fan out
    events = [
        OutboxEvent(run_id=uuid.uuid4(), type="run.finished", created_at=written) for _ in range(outbox.BATCH + 1)
    ]
    for event in events:
        event.stamp_scope("acme")
    OutboxEvent.objects.bulk_create(events)
    tasks.webhook_sweep()
    assert OutboxEvent.objects.filter(dispatched_at__isnull=True).count() == 1
    tasks.webhook_sweep()
    assert OutboxEvent.objects.filter(dispatched_at__isnull=True).count() == 0


def test_a_fan_out_enqueues_one_delivery_task_per_endpoint_that_got_messages(monkeypatch):
    sent = []
    monkeypatch.setattr(
        outbox, "enqueue_delivery", lambda ids, countdown=None: sent.append(sorted({str(i) for i in ids}))
    )
    workspace, team = make_endpoint("acme"), make_endpoint("acme/support")
    make_endpoint("acme/sales")  # nothing of acme/support reaches it
    s = paused(scope="acme/support")
    services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    paused(scope="acme/support")
    outbox.fan_out()
    assert WebhookMessage.objects.count() == 8  # (requested, decided, created) x 2 endpoints, and the other run's x 2
    # An endpoint's task sends its due messages in batches, each run's in order: one task however many messages.
    assert sent == [sorted([str(workspace.id), str(team.id)])]
