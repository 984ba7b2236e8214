"""Two Celery workers (each with its beat) through PgBouncer in transaction mode (docs/deploy.md, "PgBouncer";
docs/deploy.md, "Topology").

The web side is tests/ops/test_pgbouncer.py. Here the workers' DATABASE_URL goes through
the same kind of PgBouncer (4 server connections, handed out round robin so that session
state would be missing at once), set as docs/deploy.md says: the beat's sweep expires the
pauses (SKIP LOCKED batches, set-based writes), the fan-out turns each expiry into a
webhook message, and a real receiver gets each one exactly once, signed.
"""

import pytest

from suspensions.models import DeliveryAttempt, MessageStatus, Run, WebhookMessage
from tests.ops.test_pgbouncer import bouncer  # noqa: F401 - the fixture
from tests.processes import wait_for

from .conftest import make_endpoint, paused

pytestmark = pytest.mark.slow

PAUSES = 6


def test_two_workers_behind_pgbouncer_expire_every_pause_and_deliver_each_expiry_once(bouncer, worker, receiver):  # noqa: F811
    r = receiver()
    endpoint = make_endpoint(url=r.url, event_types=["suspension.expired"])
    pauses = [paused(reason="external_tool", ttl=1) for _ in range(PAUSES)]
    through_pgbouncer = {"DATABASE_URL": bouncer.url(), "SWEEP_INTERVAL_SECONDS": "1"}
    worker(**through_pgbouncer)
    worker(**through_pgbouncer)

    ids = [s.run_id for s in pauses]
    wait_for(lambda: Run.objects.filter(id__in=ids, state="expired").count() == PAUSES, "the sweep to expire them")
    wait_for(lambda: WebhookMessage.objects.filter(status=MessageStatus.DELIVERED).count() == PAUSES, "every delivery")
    seen = sorted((b["type"], b["data"]["suspension_id"]) for b in r.verified(endpoint.secret))
    assert seen == sorted(("suspension.expired", str(s.id)) for s in pauses)
    assert WebhookMessage.objects.count() == DeliveryAttempt.objects.count() == PAUSES
    # The workers' own connections are PgBouncer's clients: nothing reached PostgreSQL around it.
    assert bouncer.connections("CLIENTS") >= 2
    assert bouncer.connections("SERVERS") <= bouncer.pool_size
