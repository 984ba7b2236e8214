"""The Celery app: the worker and beat run the expiry sweep (docs/api.md, "2. Lifecycle")."""

import os

from celery import Celery

# Connects the JSON logging of workers and beat, and carries a request's id into the tasks it enqueues.
from suspensions.observability import celery_signals  # noqa: F401

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "suspensions_project.settings")

# Celery's Django fix-up, but keeping each worker process's database pool between tasks (see celery_pool).
app = Celery("suspensions", fixups=["suspensions_project.celery_pool:fixup"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
