"""verify_webhook and the Inbox against REAL deliveries: the live server enqueues, a Celery worker signs and sends.

The receivers are tests/push's (a real HTTP server recording what arrives)
and, for the inbox, a receiver as an engine would write it: verify, then hand
the event to the waiting loop.
"""

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks.webhooks import Webhook
from suspensions_client import AsyncClient, Inbox, WebhookVerificationError, verify_webhook

from tests.processes import wait_for

from .conftest import cont, pending

pytestmark = pytest.mark.slow


def test_a_real_delivery_verifies_and_a_tampered_or_old_one_does_not(connect, receiver, worker):
    operator = connect("operator")
    r = receiver()
    endpoint = operator.create_webhook(r.url)
    worker()
    message = operator.test_webhook(endpoint.id)
    wait_for(lambda: r.requests, "the test event's delivery")
    delivery = r.requests[0]
    event = verify_webhook(delivery.headers, delivery.body, endpoint.secret)
    assert event["type"] == "webhook.test" and event["data"]["endpoint_id"] == endpoint.id
    assert delivery.headers["webhook-id"] == message.id
    assert event == Webhook(endpoint.secret).verify(delivery.body, delivery.headers)  # the library agrees
    assert verify_webhook(delivery.headers, delivery.body.decode(), endpoint.secret) == event

    tampered = delivery.body.replace(b"webhook.test", b"webhook.tset")
    sent_at = int(delivery.headers["webhook-timestamp"])
    other_secret = operator.create_webhook(r.url + "/other").secret
    refusals = {
        "tampered body": lambda: verify_webhook(delivery.headers, tampered, endpoint.secret),
        "old timestamp": lambda: verify_webhook(delivery.headers, delivery.body, endpoint.secret, now=sent_at + 301),
        "other secret": lambda: verify_webhook(delivery.headers, delivery.body, other_secret),
        "no signature": lambda: verify_webhook(
            {**delivery.headers, "webhook-signature": ""}, delivery.body, endpoint.secret
        ),
    }
    for case, attempt in refusals.items():
        with pytest.raises(WebhookVerificationError):
            attempt()
            pytest.fail(f"{case} verified")
    assert verify_webhook(delivery.headers, delivery.body, endpoint.secret, now=sent_at + 299) == event

    wait_for(lambda: operator.webhook_messages(endpoint.id).results[0].status == "delivered", "the delivered status")
    again = operator.redeliver(endpoint.id, message.id)
    assert again.status == "pending" and again.attempt_count == 1
    wait_for(lambda: len(r.requests) == 2, "the redelivery")
    assert r.requests[1].headers["webhook-id"] == message.id
    assert verify_webhook(r.requests[1].headers, r.requests[1].body, endpoint.secret) == event


class EngineReceiver:
    """An engine's webhook receiver: verifies each delivery, hands the event to the inbox, answers 204."""

    def __init__(self, inbox: Inbox) -> None:
        self.secret, self.types = "", []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(handler) -> None:  # noqa: N802, N805 - http.server's names
                body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
                event = verify_webhook(dict(handler.headers.items()), body, self.secret)
                self.types.append(event["type"])
                inbox.deliver(event)
                handler.send_response(204)
                handler.end_headers()

            def log_message(handler, *args: object) -> None:  # noqa: N805
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_wait_fed_by_webhooks_wakes_on_the_decision_without_polling_again(base_url, connect, token, worker):
    operator, approver = connect("operator"), connect("approver")
    inbox = Inbox()
    engine_receiver = EngineReceiver(inbox)
    engine_receiver.secret = operator.create_webhook(engine_receiver.url, event_types=["approval.decided"]).secret
    worker()
    engine_token = token("acme", ["engine"], "inbox-engine")

    async def engine_loop():
        async with AsyncClient(base_url, engine_token) as engine:
            pause = await engine.pause_for_approval(await engine.register("a", scope="acme"), [pending()], cont())
            # A poll interval far beyond the test's bounded wait (60 s): only the webhook can end it in time.
            waiting = asyncio.create_task(
                engine.wait_for_admission(pause.run_id, pause.id, timeout=600, poll_interval=600, inbox=inbox)
            )
            while not inbox._waiters:  # parked in its wait, after the first poll found the run paused
                await asyncio.sleep(0.05)
            await asyncio.to_thread(approver.decide, pause.id, pause.version)
            return await asyncio.wait_for(waiting, 60)

    try:
        outcome = asyncio.run(engine_loop())
    finally:
        engine_receiver.close()
    assert outcome.admitted and engine_receiver.types == ["approval.decided"]
    assert outcome.run.state == "running" and outcome.admission.source == "approval"
