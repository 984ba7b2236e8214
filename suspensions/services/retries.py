"""When a failed push is tried again (docs/api.md, "Retries and guarantees"): webhook messages (delivery.py) and
notifications alike.

Its own module so both can import it: notifications are written by the outbox
fan-out, which the webhook delivery imports (outbox -> notifications, delivery -> outbox).
"""

import random

from django.conf import settings

JITTER = 0.2
# Waits up to this long are a Celery countdown; longer ones are the beat's (a countdown of hours
# would sit in the broker past its visibility timeout).
COUNTDOWN_LIMIT = 300.0


def retry_wait(number: int) -> float | None:
    """Seconds to wait after failed attempt `number` (WEBHOOK_RETRY_SCHEDULE, ±20% jitter); None past the schedule."""
    schedule = settings.WEBHOOK_RETRY_SCHEDULE
    if number > len(schedule):
        return None
    return float(schedule[number - 1]) * random.uniform(1 - JITTER, 1 + JITTER)
