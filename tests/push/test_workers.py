"""Push end to end (docs/api.md, "8. Push: webhooks"): transitions committed here, delivered by a real Celery worker on
Redis.

Each receiver is a real HTTP server on 127.0.0.1 that checks every signature
with the standardwebhooks library. The worker runs with a 0.2 s, 0.2 s retry
schedule, a 2 s lease and a beat every second (see the `worker` fixture), except where a
test says otherwise.
"""

import json
import os
import signal

import psutil
import pytest

from suspensions.models import DeliveryAttempt, MessageStatus, WebhookMessage
from suspensions.services import delivery, webhooks
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


# The defaults (a 20 s lease, the beat every 10 s): the bound a dead worker's messages are held to is theirs.
DEFAULT_DELAYS = {"WEBHOOK_LEASE_SECONDS": "20", "WEBHOOK_SWEEP_SECONDS": "10"}
RECOVERY_SECONDS = 30  # the contract (33): a dead worker's messages go out again within this


def sender_of(workers, port):
    """The worker whose process tree holds a TCP connection to `port`: the one sending to that receiver."""
    for proc in workers:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        if any(c.raddr and c.raddr.port == port for p in tree for c in p.net_connections(kind="tcp")):
            return proc
    raise AssertionError(f"no worker is connected to port {port}")


def test_a_worker_killed_mid_delivery_has_its_messages_sent_by_the_other_within_30_s_the_lost_attempt_counted(
    worker, receiver
):
    r = receiver(hang_first=True)
    make_endpoint(url=r.url)
    workers = [worker(**DEFAULT_DELAYS), worker(**DEFAULT_DELAYS)]
    pauses = [paused() for _ in range(3)]
    assert r.arrived.wait(60), "no worker reached the receiver"
    victim = sender_of(workers, r.port)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    r.released.set()  # its answer goes to a dead connection
    hung = r.ids()[0]
    wait_for(settled(MessageStatus.DELIVERED, 3), "the other worker's deliveries", seconds=RECOVERY_SECONDS)
    messages = {str(m.id): m for m in WebhookMessage.objects.all()}
    assert {json.loads(x.body)["data"]["run_id"] for x in r.requests} == {str(s.run_id) for s in pauses}
    assert set(r.ids()) == set(messages) and r.ids().count(hung) == 2  # the same message id, sent again
    # The attempt the dead worker cut short is counted, and says so.
    lost = messages[hung].attempt_rows.order_by("number").first()
    assert (lost.number, lost.status_code, lost.error) == (1, None, delivery.WORKER_LOST)
    assert attempts(messages[hung]) == [(1, None), (2, 200)] and messages[hung].attempts == 2
    for m in messages.values():
        assert [n for n, _ in attempts(m)] == list(range(1, m.attempts + 1))
        assert attempts(m)[-1][1] == 200


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
