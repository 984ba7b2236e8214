"""Celery's Django fix-up, keeping each worker process's database pool from one task to the next.

Celery 5.7's fix-up closes Django's connection pool after every task in a
prefork worker (celery/celery#10554, open as of this writing): each task then
opens a new pool (DB_POOL_MIN connections, each a new PostgreSQL backend)
and closes it again. Under the soak that was most of the worker's CPU (half
of it in the kernel) and held webhook delivery to about 36 messages a
second. This keeps what the fix-up does at a task's boundaries (each
connection goes back, to its pool) and closes a pool only where Celery
needs it: in a new child process, which must not use the pool it inherited
from its parent. A connection that died meanwhile (a database restart) is
found by the pool's health check (CONN_HEALTH_CHECKS) when the next task
takes one.
"""

import os
from typing import Any

from celery import Celery
from celery.fixups.django import DjangoFixup, DjangoWorkerFixup


class PooledWorkerFixup(DjangoWorkerFixup):
    def close_database(self, **kwargs: Any) -> None:
        """At a task's start and end: every open connection back to its pool; the pool stays open."""
        for conn in self._db.connections.all(initialized_only=True):
            try:
                conn.close()
            except self.interface_errors:
                pass
            except self.DatabaseError as exc:
                if "closed" not in str(exc) and "not connected" not in str(exc):
                    raise


class PooledDjangoFixup(DjangoFixup):
    _worker_fixup: DjangoWorkerFixup | None

    @property
    def worker_fixup(self) -> DjangoWorkerFixup:
        if self._worker_fixup is None:
            self._worker_fixup = PooledWorkerFixup(self.app)
        return self._worker_fixup

    @worker_fixup.setter
    def worker_fixup(self, value: DjangoWorkerFixup) -> None:
        self._worker_fixup = value


def fixup(app: Celery) -> DjangoFixup | None:
    """Celery's own Django fix-up with the worker part above (the app names this in place of Celery's)."""
    if not os.environ.get("DJANGO_SETTINGS_MODULE"):
        return None
    return PooledDjangoFixup(app).install()
