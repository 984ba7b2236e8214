"""Delivery in this process against real receivers (docs/api.md, "Retries and guarantees"): signing, retries, 410,
order, leases, safety.

The Celery worker is left out here (tests/push/test_workers.py runs one); the
enqueues are recorded instead of sent, and each step is called directly.
"""

import json
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from standardwebhooks.webhooks import Webhook

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import DeliveryAttempt, MessageStatus, WebhookEndpoint, WebhookMessage
from suspensions.observability import metrics
from suspensions.services import delivery, outbox
from suspensions.services.webhooks import new_secret
from tests.factories import principal

from .conftest import make_endpoint, paused
from .receivers import free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def enqueued(monkeypatch, settings):
    """The tasks this process would have sent to the broker, by name and arguments."""
    settings.WEBHOOK_RETRY_SCHEDULE = [0.2, 0.2]
    sent = []
    monkeypatch.setattr(outbox.current_app, "send_task", lambda name, args, countdown=None: sent.append((name, args)))
    return sent


def message_to(endpoint):
    """The message of one fresh approval pause to `endpoint`."""
    s = paused(endpoint.scope)
    outbox.fan_out()
    return WebhookMessage.objects.get(endpoint=endpoint, run_id=s.run_id)


def due_now(message):
    """What the schedule's wait (or a lease) running out looks like, without sleeping through it."""
    WebhookMessage.objects.filter(pk=message.pk).update(next_attempt_at=db_now() - timedelta(seconds=1))


def attempts(message):
    return list(DeliveryAttempt.objects.filter(message=message).order_by("number").values_list("number", "status_code"))


def test_a_delivery_is_signed_so_a_standard_webhooks_library_verifies_it(receiver):
    r = receiver()
    endpoint = make_endpoint(url=r.url)
    message = message_to(endpoint)
    assert delivery.deliver(message.id) == "delivered"
    (received,) = r.requests
    assert Webhook(endpoint.secret).verify(received.body, received.headers)["type"] == "approval.requested"
    assert received.body.decode() == message.body
    assert received.headers["webhook-id"] == str(message.id)
    assert received.headers["content-type"] == "application/json"
    message.refresh_from_db()
    assert (message.status, message.attempts, attempts(message)) == (MessageStatus.DELIVERED, 1, [(1, 200)])


def test_a_rotated_secret_signs_beside_the_new_one_until_it_expires(receiver):
    r = receiver()
    old = new_secret()
    endpoint = make_endpoint(url=r.url, previous_secret=old, previous_secret_expires_at=db_now() + timedelta(hours=1))
    delivery.deliver(message_to(endpoint).id)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(previous_secret_expires_at=db_now() - timedelta(seconds=1))
    delivery.deliver(message_to(endpoint).id)
    during, after = r.requests
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    Webhook(old).verify(during.body, during.headers)
    Webhook(endpoint.secret).verify(during.body, during.headers)
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    Webhook(endpoint.secret).verify(after.body, after.headers)


def test_a_failing_receiver_is_retried_on_the_schedule_with_the_same_id_then_the_message_fails(receiver, enqueued):
    r = receiver(default=500)
    message = message_to(make_endpoint(url=r.url))
    outcomes = [delivery.deliver(message.id)]
    for _ in range(2):
        due_now(message)
        outcomes.append(delivery.deliver(message.id))
    message.refresh_from_db()
    assert outcomes == ["retry", "retry", "failed"]
    assert (message.status, attempts(message)) == (MessageStatus.FAILED, [(1, 500), (2, 500), (3, 500)])
    assert set(r.ids()) == {str(message.id)}
    # Short waits go to the broker as countdown tasks; the beat's pass is the net under them.
    assert [args for name, args in enqueued if name == outbox.DELIVER_TASK][-2:] == [[str(message.endpoint_id)]] * 2


def test_a_410_disables_the_endpoint_and_fails_its_pending_messages(receiver):
    r = receiver(default=410)
    endpoint = make_endpoint(url=r.url)
    first, second = message_to(endpoint), message_to(endpoint)
    assert delivery.deliver(first.id) == "gone"
    endpoint.refresh_from_db()
    assert (endpoint.active, "410" in endpoint.disabled_reason) == (False, True)
    statuses = set(WebhookMessage.objects.filter(pk__in=[first.pk, second.pk]).values_list("status", flat=True))
    assert statuses == {MessageStatus.FAILED}
    assert attempts(first) == [(1, 410)] and attempts(second) == []


def test_a_redirect_is_a_failure_and_is_not_followed(receiver):
    r = receiver(default=302)
    message = message_to(make_endpoint(url=r.url))
    assert delivery.deliver(message.id) == "retry"
    attempt = DeliveryAttempt.objects.get(message=message)
    assert attempt.status_code == 302 and "not followed" in attempt.error
    assert len(r.requests) == 1


def test_a_loopback_receiver_is_refused_without_webhook_allow_private_and_the_attempt_says_why(receiver, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    r = receiver()
    message = message_to(make_endpoint(url=r.url))
    assert delivery.deliver(message.id) == "retry"
    attempt = DeliveryAttempt.objects.get(message=message)
    assert (attempt.status_code, r.requests) == (None, [])
    assert "127.0.0.1 is a loopback address" in attempt.error


def test_the_request_goes_to_the_checked_address_with_the_name_in_the_host_header(receiver, monkeypatch):
    r = receiver()
    real = socket.getaddrinfo

    def resolver(host, port, *args, **kwargs):
        return real("127.0.0.1" if host == "hooks.example.test" else host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    message = message_to(make_endpoint(url=f"http://hooks.example.test:{r.port}/in"))
    assert delivery.deliver(message.id) == "delivered"
    assert r.requests[0].headers["host"] == f"hooks.example.test:{r.port}"


def test_a_later_message_of_a_run_waits_until_the_earlier_one_to_the_same_endpoint_is_settled(receiver):
    r = receiver(statuses=[500])
    endpoint = make_endpoint(url=r.url)
    requested, decided, finished = denied_run(endpoint)
    assert delivery.deliver(requested.id) == "retry"
    assert delivery.deliver(decided.id) is None  # its run's earlier message is still pending
    assert delivery.deliver_endpoint(endpoint.id) == []  # nothing of the endpoint is free: the retry waits
    due_now(requested)
    assert delivery.deliver_endpoint(endpoint.id) == ["delivered"] * 3
    assert types_received(r) == ["approval.requested", "approval.requested", "approval.decided", "run.finished"]


def test_a_claimed_message_is_not_claimed_again_until_its_lease_is_over_and_the_lost_attempt_counts(receiver):
    endpoint = make_endpoint(url=receiver().url)
    message = message_to(endpoint)
    assert delivery.claim(message_id=message.id) is not None
    # The worker that claimed it died before recording anything: the message waits out its lease.
    assert delivery.claim(message_id=message.id) is None and delivery.claim(endpoint_id=endpoint.id) is None
    assert attempts(message) == [(1, None)]
    due_now(message)
    assert delivery.deliver_endpoint(endpoint.id) == ["delivered"]
    assert attempts(message) == [(1, None), (2, 200)]
    lost = DeliveryAttempt.objects.get(message=message, number=1)
    assert lost.error == delivery.WORKER_LOST
    message.refresh_from_db()
    assert (message.status, message.attempts) == (MessageStatus.DELIVERED, 2)


def test_an_attempt_whose_lease_ran_out_cannot_settle_the_message_its_successor_holds(receiver):
    r = receiver(statuses=[500])
    message = message_to(make_endpoint(url=r.url))
    slow = delivery.claim(message_id=message.id)  # a worker that overran its lease
    due_now(message)
    successor = delivery.claim(message_id=message.id)
    assert delivery.deliver_batch(slow) == (["stale"], True)  # its 500 changes nothing: attempt 2 holds it
    assert delivery.deliver_batch(successor) == (["delivered"], True)
    message.refresh_from_db()
    assert (message.status, attempts(message)) == (MessageStatus.DELIVERED, [(1, 500), (2, 200)])


def test_a_disabled_endpoint_gets_no_attempt_until_it_is_enabled_again(receiver):
    r = receiver()
    endpoint = make_endpoint(url=r.url)
    message = message_to(endpoint)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(active=False)
    assert (delivery.deliver(message.id), delivery.due_endpoints()) == (None, [])
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(active=True)
    assert delivery.deliver_due(max_seconds=30) == 1
    assert len(r.requests) == 1


def test_a_slack_endpoint_gets_the_text_unsigned(receiver):
    r = receiver()
    delivery.deliver(message_to(make_endpoint(url=r.url, format="slack")).id)
    (received,) = r.requests
    assert "webhook-signature" not in received.headers
    assert set(json.loads(received.body)) == {"text"}


def test_deliveries_are_counted_by_outcome_and_the_backlog_is_a_gauge(receiver):
    def delivered():
        return metrics.WEBHOOK_DELIVERIES.labels(outcome="delivered")._value.get()

    before = delivered()
    r = receiver()
    endpoint = make_endpoint(url=r.url)
    delivery.deliver(message_to(endpoint).id)
    message_to(endpoint)
    assert delivered() == before + 1
    assert "suspensions_webhook_backlog 1.0" in metrics.exposition().decode()


def denied_run(endpoint):
    """The run's three messages to `endpoint` (approval.requested, approval.decided, run.finished), one fan-out."""
    s = paused(endpoint.scope)
    services.deny_approval(
        principal=principal("user:bob"),
        suspension_id=s.id,
        version=services.Version(run_id=s.run_id, suspension_id=s.id, run_revision=2),
        reason="no",
    )
    outbox.fan_out()
    return list(WebhookMessage.objects.filter(endpoint=endpoint).order_by("event_id"))


def delivery_tasks(enqueued):
    return [args[0] for name, args in enqueued if name == outbox.DELIVER_TASK]


def types_received(r):
    return [json.loads(x.body)["type"] for x in r.requests]


def test_one_task_delivers_an_endpoints_runs_in_batches_over_one_connection_each_run_in_order(receiver, enqueued):
    r = receiver()
    endpoint = make_endpoint(url=r.url)
    first = denied_run(endpoint)
    second = [m for m in denied_run(endpoint) if m.run_id != first[0].run_id]
    # One task for the endpoint, however many messages its fan-outs made.
    assert delivery_tasks(enqueued) == [str(endpoint.id)]
    with CaptureQueriesContext(connection) as statements:
        assert delivery.deliver_endpoint(endpoint.id) == ["delivered"] * 6
    # Three rounds (one message of each run per batch), each ONE claim and ONE record, then a claim finding none.
    pushed = [q["sql"] for q in statements.captured_queries if "suspensions_cache" not in q["sql"]]
    assert len(pushed) == 7
    assert r.ids()[0::2] == [str(m.id) for m in first] and r.ids()[1::2] == [str(m.id) for m in second]
    assert len({x.client_port for x in r.requests}) == 3  # one kept-alive connection per batch
    assert set(WebhookMessage.objects.values_list("status", "attempts")) == {(MessageStatus.DELIVERED, 1)}


def test_a_middle_message_that_fails_for_good_still_lets_its_run_go_on(receiver, enqueued):
    r = receiver(statuses=[200, 500, 500, 500])
    endpoint = make_endpoint(url=r.url)
    requested, decided, finished = denied_run(endpoint)
    # Delivered, then the next one's first attempt fails: its run waits out the retry.
    assert delivery.deliver_endpoint(endpoint.id) == ["delivered", "retry"]
    assert delivery.deliver(finished.id) is None  # its run's earlier message is still pending
    assert delivery_tasks(enqueued)[-1] == str(endpoint.id)  # the retry's countdown task
    due_now(decided)
    assert delivery.deliver_endpoint(endpoint.id) == ["retry"]
    due_now(decided)
    # Past the schedule it fails, and the run's next message goes at once.
    assert delivery.deliver_endpoint(endpoint.id) == ["failed", "delivered"]
    assert types_received(r) == ["approval.requested"] + ["approval.decided"] * 3 + ["run.finished"]
    statuses = dict(WebhookMessage.objects.values_list("id", "status"))
    assert [statuses[m.id] for m in (requested, decided, finished)] == ["delivered", "failed", "delivered"]


def test_past_its_time_a_task_hands_the_endpoint_to_a_new_task(receiver, enqueued):
    r = receiver()
    endpoint = make_endpoint(url=r.url)
    denied_run(endpoint)
    assert delivery.deliver_endpoint(endpoint.id, max_seconds=0) == ["delivered"]
    assert delivery_tasks(enqueued) == [str(endpoint.id)] * 2
    assert delivery.deliver_endpoint(endpoint.id) == ["delivered"] * 2
    assert types_received(r) == ["approval.requested", "approval.decided", "run.finished"]


def test_a_message_another_worker_holds_is_skipped_and_delivered_once(receiver, enqueued):
    r = receiver()
    endpoint = make_endpoint(url=r.url)
    requested, decided, finished = denied_run(endpoint)
    assert delivery.deliver(requested.id) == "delivered"
    taken = delivery.claim(message_id=decided.id)  # another worker's claim, its send still to come
    assert delivery.deliver_endpoint(endpoint.id) == []
    assert delivery.deliver_batch(taken) == (["delivered"], True)
    assert delivery.deliver_endpoint(endpoint.id) == ["delivered"]
    assert r.ids() == [str(m.id) for m in (requested, decided, finished)]


def test_a_410_in_the_middle_of_a_chain_fails_the_rest_and_sends_nothing_more(receiver, enqueued):
    r = receiver(statuses=[200, 410])
    endpoint = make_endpoint(url=r.url)
    requested, decided, finished = denied_run(endpoint)
    assert delivery.deliver_endpoint(endpoint.id) == ["delivered", "gone"]
    assert types_received(r) == ["approval.requested", "approval.decided"]
    finished.refresh_from_db()
    assert finished.status == MessageStatus.FAILED


def test_a_receiver_that_does_not_answer_ends_the_batch_and_the_unsent_wait_with_no_attempt_counted(enqueued):
    endpoint = make_endpoint(url=f"http://127.0.0.1:{free_port()}/hooks")
    first, second = message_to(endpoint), message_to(endpoint)
    assert delivery.deliver_endpoint(endpoint.id) == ["retry"]  # one attempt: the connection was refused
    rows = {m.id: m for m in WebhookMessage.objects.all()}
    assert [(rows[m.id].status, rows[m.id].attempts) for m in (first, second)] == [
        (MessageStatus.PENDING, 1),
        (MessageStatus.PENDING, 0),
    ]
    assert attempts(first)[0][1] is None and "Connect" in DeliveryAttempt.objects.get(message=first).error
    assert attempts(second) == []
    assert delivery.deliver_endpoint(endpoint.id) == []  # both wait for the retry
    assert rows[second.id].next_attempt_at > db_now()


def test_a_delivery_task_still_queued_covers_the_later_fan_outs_of_its_endpoint(receiver, enqueued):
    endpoint = make_endpoint(url=receiver().url)
    message_to(endpoint), message_to(endpoint)
    assert delivery_tasks(enqueued) == [str(endpoint.id)]  # the second fan-out found the first task still queued
    assert delivery.deliver_endpoint(endpoint.id) == ["delivered"] * 2
    message_to(endpoint)  # once that task has started, a fan-out enqueues a new one
    assert delivery_tasks(enqueued) == [str(endpoint.id)] * 2


def test_a_batch_slower_than_its_lease_keeps_every_message_it_holds_sent_or_still_to_send(receiver, settings):
    settings.WEBHOOK_LEASE_SECONDS = 1
    r = receiver(delay=0.4)  # four answers: 1.6 s, longer than the lease
    endpoint = make_endpoint(url=r.url)
    for _ in range(4):
        message_to(endpoint)
    results = []

    def worker():
        try:
            results.extend(delivery.deliver_endpoint(endpoint.id))
        finally:
            connection.close()

    sender = threading.Thread(target=worker)
    sender.start()
    assert r.arrived.wait(10)
    taken = []
    while sender.is_alive():  # another worker, claiming all along
        batch = delivery.claim(endpoint_id=endpoint.id)
        taken += batch.messages if batch else []
        time.sleep(0.05)
    sender.join()
    assert (results, taken, len(r.requests)) == (["delivered"] * 4, [], 4)
