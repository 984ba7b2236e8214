"""gunicorn's gthread worker, stopping without resetting the connections queued on its listening socket.

A node's listening socket is shared by its master and every worker. When a node stops (SIGTERM),
gthread's worker stops accepting at once but keeps its copy of the socket open until it has
finished its requests; the kernel meanwhile still completes handshakes and queues the new
connections, and resets every one of them when the last copy closes: requests that were sent
and never read, which nginx answers with a 502 (it never sends a POST to a second node once it
was sent to one) and a client cannot tell from a request that ran (docs/deploy.md, "Restarting
without dropping requests").

This worker, once it stops, accepts what is already queued (it answers those with the rest, within
graceful_timeout) and closes its copy of the socket right away. When the last process of the node
has done so, a new connection is refused outright, and nginx passes a refused request to the next
node. On a reload (SIGHUP) the new workers keep the socket open and go on taking its queue.

A subclass, named by `worker_class` in gunicorn.conf.py: gunicorn's own code is not changed. It
overrides `set_accept_enabled`, which gthread's `run` calls with False once when it stops (and
when a worker holds `worker_connections` connections, where it does nothing more here);
tests/ops/test_restarts.py shows the pinned gunicorn still behaves so.
"""

import select
from typing import Any

from gunicorn.workers.gthread import ThreadWorker


class DrainingThreadWorker(ThreadWorker):  # type: ignore[misc]
    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive:
            for listener in self.sockets:
                self._take_queued(listener)
                listener.close()

    def _take_queued(self, listener: Any) -> None:
        """Accept every connection already queued on `listener`; each joins the requests this worker finishes."""
        listener.setblocking(False)
        while select.select([listener], [], [], 0)[0]:
            self.accept(listener)  # gthread's own (a connection its client already reset is dropped there)
