"""Webhook events handed to waiting engine loops, so a wait wakes when the event arrives, not at its next poll.

The engine's webhook receiver verifies each delivery and hands it over:

    inbox = Inbox()
    # in the receiver (any thread, or the event loop):
    inbox.deliver(verify_webhook(headers, body, secret))
    # in the engine loop:
    outcome = client.wait_for_admission(run_id, suspension_id, timeout=3600, poll_interval=60, inbox=inbox)

An event only wakes the wait; the wait then reads the run from the API,
which stays the source of truth (deliveries are at least once and may come
late or out of order across runs). Thread-safe; one inbox serves sync and
async waits alike.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any


class Inbox:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._counts: dict[str, int] = {}
        self._waiters: list[tuple[str, asyncio.AbstractEventLoop, asyncio.Event]] = []

    def deliver(self, event: Mapping[str, Any]) -> None:
        """Hand over one delivered event (`{"type", "timestamp", "data"}`); events without a run are ignored."""
        data = event.get("data")
        run_id = data.get("run_id") if isinstance(data, Mapping) else None
        if not isinstance(run_id, str):
            return
        with self._changed:
            self._counts[run_id] = self._counts.get(run_id, 0) + 1
            self._changed.notify_all()
            waiters = [(loop, flag) for rid, loop, flag in self._waiters if rid == run_id]
        for loop, flag in waiters:
            loop.call_soon_threadsafe(flag.set)

    def count(self, run_id: str) -> int:
        """How many events of this run arrived so far: a wait started now wakes on the next one."""
        with self._changed:
            return self._counts.get(run_id, 0)

    def wait(self, run_id: str, after: int, timeout: float) -> bool:
        """Block until an event of `run_id` beyond count `after` arrives, or `timeout` passes; True if one did."""
        with self._changed:
            return self._changed.wait_for(lambda: self._counts.get(run_id, 0) > after, timeout)

    async def wait_async(self, run_id: str, after: int, timeout: float) -> bool:
        """`wait` for an event loop."""
        flag = asyncio.Event()
        entry = (run_id, asyncio.get_running_loop(), flag)
        with self._changed:
            if self._counts.get(run_id, 0) > after:
                return True
            self._waiters.append(entry)
        try:
            await asyncio.wait_for(flag.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            with self._changed:
                self._waiters.remove(entry)
