"""The Redis broker transport (suspensions_project/broker.py): one client per channel, messages still arrive."""

import uuid

import pytest
from django.conf import settings
from kombu import Connection, Exchange, Queue

from suspensions_project import broker
from suspensions_project.celery import app

pytestmark = pytest.mark.skipif(
    not settings.CELERY_BROKER_URL.startswith("redis://"), reason="the transport serves redis:// brokers"
)


def test_the_app_publishes_through_the_project_transport():
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, broker.Transport)
        assert isinstance(conn.default_channel, broker.Channel)


def test_a_channel_keeps_its_client_until_its_pool_is_replaced():
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        first = channel._create_client()
        assert channel._create_client() is first
        assert first.connection_pool is channel.pool
        channel._pool = None  # what a reconnect does
        second = channel._create_client()
        assert second is not first
        assert second.connection_pool is channel.pool
        assert channel._create_client(asynchronous=True) is not second


def test_every_message_published_on_one_channel_is_received_in_order():
    exchange = Exchange(f"test-broker-{uuid.uuid4().hex}", type="direct")
    queue = Queue(exchange.name, exchange, routing_key="k")
    with Connection(settings.CELERY_BROKER_URL, transport=settings.CELERY_BROKER_TRANSPORT) as conn:
        producer = conn.Producer()
        for n in range(20):
            producer.publish({"n": n}, exchange=exchange, routing_key="k", declare=[queue])
        received = []
        with conn.SimpleQueue(queue) as simple:
            for _ in range(20):
                message = simple.get(timeout=5)
                received.append(message.payload["n"])
                message.ack()
            queue(conn.default_channel).delete()
    assert received == list(range(20))
