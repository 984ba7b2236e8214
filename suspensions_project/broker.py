"""kombu's Redis transport, with one Redis client per channel instead of one per published message.

kombu 5.7's Redis channel builds a new `redis.Redis` for every message it
publishes (`conn_or_acquire` -> `_create_client`), and redis-py builds its
case-insensitive table of ~170 response callbacks in each one: a quarter of
the CPU of `send_task`, paid by every announced transition's fan-out task
(on the web request's thread) and every delivery task a fan-out enqueues
(docs/performance.md). The clients share the channel's connection pool and
hold no other state, so the channel keeps the one it built, and builds it
again only when the pool is replaced (a reconnect resets it).

Used for `redis://` brokers only (settings.CELERY_BROKER_TRANSPORT); the
asynchronous client (the worker's BRPOP) is kombu's own.
"""

from typing import Any

from kombu.transport import redis


class Channel(redis.Channel):
    _sync_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)
        client = self._sync_client
        if client is None or client.connection_pool is not self.pool:
            client = self._sync_client = super()._create_client()
        return client


class Transport(redis.Transport):
    Channel = Channel
