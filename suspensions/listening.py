"""The waiters' side of "Waiting without webhooks" (docs/api.md): one LISTEN connection per event loop, and
who waits on what.

Every event row announces itself at its commit (`NOTIFY suspensions_events '<run id> <event id>'`, migration
0023_event_announce). In the ASGI process (suspensions_project/asgi.py) one event loop serves every waiter, so one
connection LISTENs for all of them and wakes, for each notification, the waits on that run and every event stream. A
wait that was woken reads the database again: the notification says only that something happened.

Under WSGI (runserver, the test client, a sync gunicorn), each async view runs in an event loop of its own, so
each gets its own hub and connection while it waits: correct, one connection per waiter; production routes the
long-lived endpoints to the ASGI process (docs/deploy.md, "Waits and the event stream").

A dropped LISTEN connection is reopened after a second, and every waiter is woken then, so nothing that
happened while it was down is missed: each reads the database again.
"""

import asyncio
import contextlib
import logging
import weakref
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
from django.db import connections

from .exceptions import Unavailable
from .observability import metrics

CHANNEL = "suspensions_events"
RECONNECT_SECONDS = 1.0
LISTEN_TIMEOUT_SECONDS = 10.0

log = logging.getLogger(__name__)
_hubs: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub]" = weakref.WeakKeyDictionary()
_long_lived: "weakref.WeakSet[asyncio.AbstractEventLoop]" = weakref.WeakSet()


def serving_loop() -> None:
    """Called by the ASGI application (suspensions_project/asgi.py) on each request: this loop outlives its requests,
    so its hub is kept and shared."""
    _long_lived.add(asyncio.get_running_loop())


@contextlib.asynccontextmanager
async def hub() -> AsyncIterator["Hub"]:
    """The hub a wait uses: the loop's shared one in the ASGI process; elsewhere one of its own, closed after it."""
    loop = asyncio.get_running_loop()
    if loop in _long_lived:
        shared = _hubs.get(loop)
        if shared is None:
            shared = _hubs[loop] = Hub()
        yield await shared.started()
        return
    own = Hub()
    try:
        yield await own.started()
    finally:
        await own.close()


def conninfo() -> dict[str, Any]:
    """The primary's connection parameters, as Django's own connections use them, without the pool's options."""
    params = connections["default"].get_connection_params()
    params.pop("pool", None)
    params.pop("prepare_threshold", None)
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return {**params, "autocommit": True}


class Hub:
    """The LISTEN connection of one event loop, and the asyncio.Events of what waits on it."""

    def __init__(self) -> None:
        self.runs: defaultdict[str, set[asyncio.Event]] = defaultdict(set)
        self.streams: set[asyncio.Event] = set()
        self.listening = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.params = conninfo()

    async def started(self) -> "Hub":
        """Listening before it returns: a wait registered after this misses nothing."""
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self.listen())
        try:
            await asyncio.wait_for(self.listening.wait(), LISTEN_TIMEOUT_SECONDS)
        except TimeoutError:
            raise Unavailable("the service cannot listen for changes right now; retry shortly") from None
        return self

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def listen(self) -> None:
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(**self.params)
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    self.wake_all()  # whatever happened before this connection listened
                    async for note in conn.notifies():
                        self.wake(note.payload.partition(" ")[0])
            except (psycopg.Error, OSError) as exc:
                log.warning("the LISTEN connection failed (%s); reopening in %ss", exc, RECONNECT_SECONDS)
            self.listening.clear()
            self.wake_all()
            await asyncio.sleep(RECONNECT_SECONDS)

    def wake(self, run_id: str) -> None:
        for event in self.runs.get(run_id, ()):
            event.set()
        for event in self.streams:
            event.set()

    def wake_all(self) -> None:
        for waiting in self.runs.values():
            for event in waiting:
                event.set()
        for event in self.streams:
            event.set()

    @contextlib.contextmanager
    def watching_run(self, run_id: str) -> Iterator[asyncio.Event]:
        """An asyncio.Event set whenever the run `run_id` has a new event (or the hub reconnected)."""
        event = asyncio.Event()
        self.runs[run_id].add(event)
        gauge = metrics.waiters("wait")
        gauge.inc()
        try:
            yield event
        finally:
            gauge.dec()
            waiting = self.runs[run_id]
            waiting.discard(event)
            if not waiting:
                del self.runs[run_id]

    @contextlib.contextmanager
    def watching_events(self) -> Iterator[asyncio.Event]:
        """An asyncio.Event set whenever any event is written (or the hub reconnected)."""
        event = asyncio.Event()
        self.streams.add(event)
        gauge = metrics.waiters("stream")
        gauge.inc()
        try:
            yield event
        finally:
            gauge.dec()
            self.streams.discard(event)
