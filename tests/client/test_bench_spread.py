"""The bench's keep-alive connections reach every gunicorn worker (bench/common.py, `Gunicorn.clients`).

A gthread worker keeps each connection it accepts; clients that connect at
once mostly land on one worker, and the bench's figures then measure one
process of two (docs/performance.md, "Where the time goes"). Here on the client
tests' gunicorn (2 workers).
"""

import collections
from collections.abc import Callable

from common import Gunicorn


def test_the_bench_spreads_its_connections_evenly_over_the_workers(
    gunicorn: Gunicorn, token: Callable[..., str], transactional_db: None
) -> None:
    clients = gunicorn.clients(token("acme", ["engine"], "bench-spread"), 4)
    try:
        owners = [gunicorn.worker_of(client) for client in clients]
        assert set(owners) == set(gunicorn.worker_pids())
        assert sorted(collections.Counter(owners).values()) == [2, 2]
        assert gunicorn.spread(clients) == [2, 2]
        # Kept connections go on serving: the figures are taken on them.
        assert [client.call("GET", "/healthz")[0] for client in clients] == [200] * 4
        assert [gunicorn.worker_of(client) for client in clients] == owners
    finally:
        for client in clients:
            client.close()
