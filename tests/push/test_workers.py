"""Push end to end (DESIGN §14): transitions committed here, delivered by a real Celery worker on Redis.

Each receiver is a real HTTP server on 127.0.0.1 that checks every signature
with the standardwebhooks library. The worker runs with a 0.2 s, 0.2 s retry
schedule, a 2 s lease and a beat every second (see the `worker` fixture).
"""

import os
import signal

import pytest

from suspensions.models import DeliveryAttempt, MessageStatus, WebhookMessage
from suspensions.services import webhooks
from tests.factories import principal
from tests.processes import wait_for

from .conftest import make_endpoint, paused
from .receivers import free_port

pytestmark = pytest.mark.slow


def settled(status, count=1):
    return lambda: WebhookMessage.objects.filter(status=status).count() >= count


def attempts(message):
    return list(DeliveryAttempt.objects.filter(message=message).order_by("number").values_list("number", "status_code"))


def test_a_receiver_failing_twice_gets_the_same_signed_message_three_times_and_it_is_delivered_once(worker, receiver):
    r = receiver(statuses=[500, 500])
    endpoint = make_endpoint(url=r.url)
    worker()
    s = paused()
    wait_for(settled(MessageStatus.DELIVERED), "the delivery")
    message = WebhookMessage.objects.get()
    bodies = r.verified(endpoint.secret)
    assert r.ids() == [str(message.id)] * 3
    assert [x.status for x in r.requests] == [500, 500, 200]
    assert {b["data"]["suspension_id"] for b in bodies} == {str(s.id)}
    assert attempts(message) == [(1, 500), (2, 500), (3, 200)]


def test_a_receiver_down_for_the_whole_schedule_leaves_the_message_failed_and_redelivery_delivers_it(worker, receiver):
    port = free_port()
    endpoint = make_endpoint(url=f"http://127.0.0.1:{port}/hooks")
    worker()
    paused()
    wait_for(settled(MessageStatus.FAILED), "the schedule to run out")
    message = WebhookMessage.objects.get()
    assert [(a.status_code, "Connect" in a.error) for a in message.attempt_rows.order_by("number")] == [
        (None, True)
    ] * 3
    r = receiver(port=port)
    webhooks.redeliver(
        principal=principal("token:ops", "acme", "operator"), endpoint_id=endpoint.id, message_id=message.id
    )
    wait_for(settled(MessageStatus.DELIVERED), "the redelivery")
    r.verified(endpoint.secret)
    assert r.ids() == [str(message.id)]
    assert attempts(message)[-1] == (4, 200)


def test_a_worker_killed_in_the_middle_of_a_delivery_loses_nothing_and_its_successor_delivers_it(worker, receiver):
    r = receiver(hang_first=True)
    endpoint = make_endpoint(url=r.url)
    first = worker()
    paused()
    assert r.arrived.wait(60), "the first worker never reached the receiver"
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    r.released.set()
    message = WebhookMessage.objects.get()
    # Killed after its claim committed and before its outcome: pending, under its lease, no attempt recorded.
    assert (message.status, attempts(message)) == (MessageStatus.PENDING, [])
    worker()
    wait_for(settled(MessageStatus.DELIVERED), "the successor's delivery after the lease")
    r.verified(endpoint.secret)
    assert set(r.ids()) == {str(message.id)} and len(r.requests) >= 2
    assert attempts(message)[-1][1] == 200


def test_an_endpoint_of_a_team_gets_nothing_of_its_sibling_and_the_workspace_endpoint_gets_both(worker, receiver):
    workspace, support = receiver(), receiver()
    workspace_endpoint = make_endpoint("acme", url=workspace.url)
    support_endpoint = make_endpoint("acme/support", url=support.url)
    worker()
    on_support, on_sales = paused("acme/support"), paused("acme/sales")
    wait_for(settled(MessageStatus.DELIVERED, 3), "three deliveries")
    runs = {b["data"]["run_id"] for b in workspace.verified(workspace_endpoint.secret)}
    assert runs == {str(on_support.run_id), str(on_sales.run_id)}
    assert [b["data"]["run_id"] for b in support.verified(support_endpoint.secret)] == [str(on_support.run_id)]
