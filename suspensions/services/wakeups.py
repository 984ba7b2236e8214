"""Fan-out wake-ups, coalesced: one Celery task for the outbox rows a process committed within a few milliseconds.

Every announced transition (an approval asked for or decided, a run
finished, an admission made) commits its outbox rows and then wakes the
fan-out with one Celery task carrying their ids (services.outbox). A
Celery `send_task` costs about a millisecond of CPU in the sending process
(routing, the message's headers, kombu's producer, the broker's round
trip): as much as four of the transition's own statements, on the web
request that made the transition. Here the ids a web process commits
within `FAN_OUT_WINDOW_MS` (200 by default; 50 before issue 33) are sent together, by one
daemon thread of that process, as one task:

- the request that committed the rows only appends their ids to a list;
- the thread sends at most one task a window: ids that arrive after a
  quiet window leave at once (a quiet service adds no delay), ids that
  arrive sooner wait for the window's end with whatever else arrives;
- the busier the process, the more ids a task carries: at 35 announced
  transitions a second per process, a window of 50 ms sends one task for
  about every three (bench/cpu.py's round trips: 1,350 tasks without the
  window, 397 with it), and the fan-out task then holds and dispatches
  them in one transaction instead of one each; on the worker's side each
  task costs about 4 ms of CPU however few ids it carries (Celery's own
  share), which is why the window is 200 ms since issue 33: a web process
  sends at most 5 fan-out tasks a second (docs/performance.md, "Where the time goes");
- a wake-up is no promise: the rows are committed before their ids get
  here, and a row whose wake-up is lost (the process killed inside the
  window, a broker that is down) is found undispatched by the beat's
  webhook sweep (tasks.webhook_sweep, `LOST_AFTER`), exactly as before;
- the window delays a webhook by at most the window; `FAN_OUT_WINDOW_MS=0`
  sends each commit's task at its commit, in the committing thread, as the
  service did before the window existed;
- a process forked after its thread started (a prefork Celery child, a
  gunicorn worker) starts its own thread on its first wake-up; what is
  still waiting when a process exits normally is sent by `atexit`.

docs/decisions.md ("Fan-out") and docs/api.md (section 8) say the same for operators.
"""

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from ..observability import tracing

log = logging.getLogger(__name__)


class Coalescer:
    """Ids added within one window, sent together by one daemon thread (see the module's docstring).

    `send(ids)` sends one wake-up for at most `chunk` ids; `window()` is the
    window in seconds, read at each `add` (0 or less: send at once, here).
    """

    def __init__(self, send: Callable[[list[int]], None], window: Callable[[], float], chunk: int) -> None:
        self._send = send
        self._window = window
        self._chunk = chunk
        self._reset()
        atexit.register(self.flush)

    def _reset(self) -> None:
        """This process's own state: a forked child must not share its parent's locks, list or (dead) thread."""
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._waiting = threading.Condition(self._lock)
        self._sending = threading.Lock()
        self._pending: list[int] = []
        # The trace context of each add (traces on): the wake-up is sent in the first, linking the others.
        self._contexts: list[Any] = []
        self._thread: threading.Thread | None = None
        self._last = float("-inf")  # when the last send ended

    def add(self, ids: list[int]) -> None:
        """Wake the fan-out for these ids: at once when the window is 0, else within one window."""
        if not ids:
            return
        window = self._window()
        if window <= 0:
            self._send_all(list(ids))
            return
        if self._pid != os.getpid():
            self._reset()
        carried = tracing.current_context()
        with self._lock:
            idle = not self._pending
            self._pending.extend(ids)
            if carried is not None:
                self._contexts.append(carried)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fan-out-wakeups", daemon=True)
                self._thread.start()
            if idle:
                self._waiting.notify()

    def flush(self) -> None:
        """Send what is waiting now; when it returns, every id added before it has been sent (or its send failed)."""
        with self._sending:
            with self._lock:
                ids, self._pending = self._pending, []
                contexts, self._contexts = self._contexts, []
            with tracing.sending(contexts, "fan-out wake-up"):
                self._send_all(ids)
            self._last = time.monotonic()

    def _run(self) -> None:
        """At most one send a window: the first ids after a quiet window leave at once, later ones wait for its end."""
        while True:
            with self._lock:
                while not self._pending:
                    self._waiting.wait()
                wait = self._last + self._window() - time.monotonic()
                if wait > 0:
                    self._waiting.wait(wait)  # an add after a flush wakes it early: look again
                    continue
            self.flush()

    def _send_all(self, ids: list[int]) -> None:
        for start in range(0, len(ids), self._chunk):
            try:
                self._send(ids[start : start + self._chunk])
            except Exception:  # noqa: BLE001 - a lost wake-up is the beat's; the request that made the rows is gone
                log.exception("fan-out wake-up not sent: the beat's webhook sweep will find its outbox rows")
