"""Metrics, JSON logs with request context, and the sweep's heartbeat (docs/api.md, "7.11 Metrics";
docs/deploy.md, "Logs"; docs/api.md, "7.10 Health and schema").

    context.py         the request id, principal and run id every log line carries
    logs.py            the JSON formatter, the context filter, the transition and access lines
    metrics.py         counters written by every process, gauges read at scrape time
    heartbeat.py       the last successful sweep, one database row
    middleware.py      X-Request-ID in and out, latency by route, the access line
    views.py           GET /metrics
    celery_signals.py  the same logging in Celery, the request id carried into tasks

Nothing is imported here: the logging configuration loads context and logs
before the apps are ready, and those two import no model.
"""
