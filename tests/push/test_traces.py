"""Traces across the whole path (docs/deploy.md, "Traces"): one approval, from the API request that decides it
through the claim, the fan-out and the delivery to the receiver, is one trace.

Here every span goes to an in-memory exporter in this process: the request is served by Django's test client,
and a real Celery worker runs in a thread of this process (celery.contrib.testing's `start_worker`, the
`solo` pool) on the test's Redis broker; the receiver is a real HTTP server. tests/ops/test_traces_otlp.py
follows the same trace across real processes (gunicorn, a Celery worker) into a real OTLP receiver.
"""

import json
import os
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import connections
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, StatusCode, TraceFlags

from suspensions.clock import db_now
from suspensions.models import MessageStatus, OutboxEvent, Suspension, WebhookMessage
from suspensions.observability import tracing
from suspensions_project.celery import app
from tests.helpers import client, pause, version
from tests.processes import wait_for

from .conftest import make_endpoint, paused

pytestmark = pytest.mark.slow

# The engine's trace, as its own traceparent names it: the approver's request continues it here.
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def fresh_connections():
    """Every database pool closed: the next connection is a new one, made through psycopg as instrumented now."""
    for conn in connections.all():
        conn.close()
        conn.close_pool()


@pytest.fixture
def spans(transactional_db):
    """An in-memory exporter of every span this process ends, traces on for the test only.

    A process with traces on sets them up before its first connection (suspensions/apps.py); here the pools
    opened before are closed, so the SQL of the test is traced too.
    """
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    fresh_connections()
    yield exporter
    tracing.uninstall()
    fresh_connections()
    provider.shutdown()


@pytest.fixture
def in_process_worker(transactional_db):
    """A real Celery worker on the test's broker, in a thread of this process: its spans reach `spans`.

    Celery's logging set-up writes its level into os.environ (CELERY_LOG_LEVEL=30), which the service's
    settings would then read in every process a later test starts: the environment is put back after.
    """
    environment = dict(os.environ)
    try:
        with start_worker(
            app,
            pool="solo",
            perform_ping_check=False,
            loglevel="WARNING",
            queues=["sweep", "celery", "fanout", "delivery"],
        ) as worker:
            yield worker
    finally:
        os.environ.clear()
        os.environ.update(environment)


def parent_of(span):
    return span.parent.span_id if span.parent is not None else None


def test_one_approval_is_one_trace_from_the_request_to_the_receiver(spans, in_process_worker, receiver, token):
    r = receiver()
    endpoint = make_endpoint(url=r.url, event_types=["approval.decided"])
    engine = client(token("acme", ["engine"], "engine"))
    alice = client(token("acme", ["approver"], "alice"))
    s = pause(engine, reason="approval")

    decided = post_with_traceparent(alice, s)
    assert decided.status_code == 201, decided.content

    # The delivery task's span ends once it has recorded the outcome.
    wait_for(lambda: finished(spans, "run/suspensions.tasks.deliver_endpoint"), "the delivery task's span")
    assert WebhookMessage.objects.get().status == MessageStatus.DELIVERED
    (received,) = r.requests
    assert json.loads(received.body)["type"] == "approval.decided"
    r.verified(endpoint.secret)  # the signature holds with the traceparent header beside it

    # The receiver continues the engine's trace: its traceparent names the same trace.
    version_, trace_id, span_id, flags = received.headers["traceparent"].split("-")
    assert (version_, trace_id, flags) == ("00", TRACE_ID, "01")

    ours = [sp for sp in spans.get_finished_spans() if format(sp.context.trace_id, "032x") == TRACE_ID]
    by_name = {}
    for sp in ours:
        by_name.setdefault(sp.name, []).append(sp)

    (request,) = [sp for sp in ours if sp.kind == SpanKind.SERVER]
    assert request.attributes["http.route"] == "api/v1/approvals/<uuid:pk>/decide"
    assert format(request.parent.span_id, "016x") == "00f067aa0ba902b7"  # the caller's span

    (claim,) = by_name["claim Vote"]
    assert parent_of(claim) == request.context.span_id
    assert claim.attributes[tracing.RUN] == s["run_id"]
    assert claim.attributes[tracing.PAUSE] == s["id"]
    assert claim.attributes[tracing.DECISION] == "approved"
    assert claim.attributes[tracing.APPROVER] == "token:alice"
    assert claim.attributes[tracing.WAIT] >= 0
    assert claim.attributes[tracing.EVENTS] == "admitted"

    (wakeup,) = by_name["fan-out wake-up"]
    assert parent_of(wakeup) == claim.context.span_id
    (fan_out,) = by_name["run/suspensions.tasks.fan_out_outbox"]
    (delivery,) = by_name["run/suspensions.tasks.deliver_endpoint"]
    (webhook,) = by_name["webhook POST"]
    assert ancestors(fan_out, ours)[-3:] == [wakeup, claim, request]
    assert fan_out in ancestors(delivery, ours)
    assert parent_of(webhook) == delivery.context.span_id
    assert webhook.kind == SpanKind.CLIENT
    assert webhook.attributes["http.response.status_code"] == 200
    assert webhook.attributes[tracing.RUN] == s["run_id"]
    # The receiver's parent span is the POST's own.
    assert span_id == format(webhook.context.span_id, "016x")
    # The claim's SQL is traced too, inside it (psycopg's instrumentation).
    assert any(parent_of(sp) == claim.context.span_id and sp.kind == SpanKind.CLIENT for sp in ours)

    # The row that carried the context across the fan-out names the claim's span.
    event = OutboxEvent.objects.get(type="approval.decided")
    assert event.traceparent == f"00-{TRACE_ID}-{format(claim.context.span_id, '016x')}-01"


def test_a_message_sent_by_another_transitions_task_is_still_in_its_own_trace(spans, in_process_worker, receiver):
    """A delivery task sends the messages of many transitions: each POST is a span of its own transition's trace,
    linking the task's span (the context comes from the message's row, not from the task)."""
    r = receiver()
    make_endpoint(url=r.url, event_types=["approval.requested"])
    first, second = paused(), paused()
    wait_for(lambda: WebhookMessage.objects.filter(status=MessageStatus.DELIVERED).count() == 2, "both deliveries")
    wait_for(lambda: len(finished(spans, "webhook POST")) == 2, "both POSTs' spans")
    posts = finished(spans, "webhook POST")
    claims = {sp.attributes[tracing.PAUSE]: sp for sp in finished(spans, "claim Suspend")}
    assert set(claims) == {str(first.id), str(second.id)}
    for claim in claims.values():
        (sent,) = [p for p in posts if p.context.trace_id == claim.context.trace_id]
        assert sent.attributes[tracing.RUN] == claim.attributes[tracing.RUN]
    received = {h.headers["traceparent"].split("-")[1] for h in r.requests}
    assert received == {format(c.context.trace_id, "032x") for c in claims.values()}


def test_with_traces_off_nothing_is_recorded_or_sent(transactional_db, receiver, in_process_worker):
    r = receiver()
    make_endpoint(url=r.url)
    assert not tracing.enabled()
    paused()
    wait_for(lambda: WebhookMessage.objects.filter(status=MessageStatus.DELIVERED).exists(), "the delivery")
    assert "traceparent" not in r.requests[0].headers
    assert OutboxEvent.objects.get().traceparent == ""
    assert WebhookMessage.objects.get().traceparent == ""


def finished(exporter, name):
    return [sp for sp in exporter.get_finished_spans() if sp.name == name]


def post_with_traceparent(c, s):
    body = {"version": version(s), "decision": "approve"}
    return c.post(
        f"/api/v1/approvals/{s['id']}/decide",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_TRACEPARENT=CALLER,
    )


def ancestors(span, among):
    """`span`'s parents within `among`, nearest first."""
    by_id = {sp.context.span_id: sp for sp in among}
    found = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        found.append(span)
    return found


def test_a_capability_in_a_path_never_reaches_a_span(spans, engine):
    """The request span's URL attributes are redacted as the access log is (docs/deploy.md, "Logs")."""
    secret = "cap-" + "7" * 40
    engine.post(f"/api/v1/callbacks/{secret}?x=1", data="{}", content_type="application/json")
    engine.get(f"/console/act/{secret}")
    engine.get(f"/console/login/?next=%2Fconsole%2Fact%2F{secret}")
    served = [sp for sp in spans.get_finished_spans() if sp.kind == SpanKind.SERVER]
    assert len(served) == 3
    everything = [str(v) for sp in spans.get_finished_spans() for v in sp.attributes.values()]
    everything += [sp.name for sp in spans.get_finished_spans()]
    assert not [v for v in everything if secret in v]
    urls = [sp.attributes.get("http.url", "") + sp.attributes.get("http.target", "") for sp in served]
    assert "/api/v1/callbacks/<redacted>" in urls[0] and "/console/act/<redacted>" in urls[1]
    assert "%2Fconsole%2Fact%2F<redacted>" in urls[2]


def test_a_wake_up_for_commits_of_several_traces_is_in_the_first_and_links_the_others(spans):
    """The fan-out's wake-up carries the ids of several commits (services/wakeups.py): one parent, the rest links."""
    first, second = (SpanContext(t, s, is_remote=False, trace_flags=TraceFlags(1)) for t, s in ((1, 2), (3, 4)))
    contexts = [trace.set_span_in_context(NonRecordingSpan(c)) for c in (first, second, first)]
    with tracing.sending([None, *contexts], "fan-out wake-up"):
        pass
    (span,) = finished(spans, "fan-out wake-up")
    assert (span.context.trace_id, span.parent.span_id) == (1, 2)
    assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [(3, 4)]


def test_a_refused_claim_is_an_attribute_of_its_span_not_an_error(spans, engine, token):
    alice = client(token("acme", ["approver"], "alice"))
    s = pause(engine, reason="approval")
    assert post_with_traceparent(alice, s).status_code == 201
    again = alice.post(
        f"/api/v1/approvals/{s['id']}/decide",
        data=json.dumps({"version": version(s), "decision": "deny", "reason": "no"}),
        content_type="application/json",
    )
    assert again.status_code == 409, again.content
    denied = finished(spans, "claim Deny")[-1]
    assert denied.attributes[tracing.REFUSAL] == again.json()["code"]
    assert denied.status.status_code == StatusCode.UNSET
    assert not denied.events  # no exception recorded


def test_an_expiry_is_sent_in_the_trace_of_the_sweep_task_that_expired_it(spans, in_process_worker, receiver):
    r = receiver()
    make_endpoint(url=r.url, event_types=["suspension.expired"])
    s = paused(ttl=60)
    past = db_now() - timedelta(seconds=1)
    Suspension.objects.filter(pk=s.id).update(expires_at=past, deadline=past)
    app.send_task("suspensions.tasks.sweep_expired")
    wait_for(lambda: finished(spans, "webhook POST"), "the expiry's POST span")
    (sweep,) = finished(spans, "run/suspensions.tasks.sweep_expired")
    (sent,) = finished(spans, "webhook POST")
    assert sent.context.trace_id == sweep.context.trace_id
    assert OutboxEvent.objects.get(type="suspension.expired").traceparent.split("-")[2] == format(
        sweep.context.span_id, "016x"
    )
    assert r.requests[0].headers["traceparent"].split("-")[1] == format(sweep.context.trace_id, "032x")
