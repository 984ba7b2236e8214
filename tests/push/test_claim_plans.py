"""The delivery claim keeps an index-driven plan whatever the statistics say (issue 50, item 11).

Found by the topology soak: the claim's anti join ran as a nested loop over
every pending message for each candidate (`Rows Removed by Join Filter:
36431328`, 42.5 s a claim; 1.5 ms after `VACUUM ANALYZE`), and every delivery
task held its worker for a minute.

Reproduced here with 100,000 messages bulk-filled, autovacuum off for their
tables: on tables never analyzed the planner's defaults already chose the
index; the bad plan comes from statistics taken while no message was pending
(the planner then believes message_due, the pending messages, empty and scans
it for each candidate). The claim's own statement, captured from
`delivery.claim` as it reaches the database and explained instead of
executed, must probe each run's earlier messages through message_run_order,
with no join filter doing that work row by row.
"""

import json
from collections.abc import Iterator

import pytest
from django.db import connection

from suspensions.models import DeliveryAttempt, WebhookEndpoint, WebhookMessage
from suspensions.services import delivery

from .conftest import make_endpoint

pytestmark = pytest.mark.django_db

MESSAGES = 100_000
MESSAGE = WebhookMessage._meta.db_table
TABLES = (MESSAGE, WebhookEndpoint._meta.db_table, DeliveryAttempt._meta.db_table)


class Explained(Exception):
    """Raised by the capture instead of executing the statement: its plan is in `plan`."""

    def __init__(self, plan: dict) -> None:
        self.plan = plan


def explained_instead(execute, sql, params, many, context):
    """An execute wrapper: EXPLAIN (FORMAT JSON) the statement with its own parameters, then stop the caller."""
    execute("EXPLAIN (FORMAT JSON) " + sql, params, many, context)
    raise Explained(context["cursor"].fetchone()[0][0]["Plan"])


def nodes(plan: dict) -> Iterator[dict]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from nodes(child)


def fill(endpoint: WebhookEndpoint, first: int, last: int, status: str) -> None:
    """Messages `first`..`last` to `endpoint`, ten per run, due in event order, in one set-based INSERT.

    `status`: a SQL expression of the series' `g` (every tenth pending, say).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {MESSAGE} (id, endpoint_id, event_id, run_id, type, body, status, attempts,
                                   next_attempt_at, created_at, delivered_at, scope, scope_l1, scope_l2, scope_l3)
            SELECT gen_random_uuid(), %(endpoint)s, g, md5((g / 10)::text)::uuid, 'run.finished', '{{}}', {status}, 0,
                   now() - make_interval(secs => %(last)s + 1 - g), now(), NULL, 'acme', 'acme', '', ''
            FROM generate_series(%(first)s, %(last)s) g
            """,
            {"endpoint": endpoint.id, "first": first, "last": last},
        )


def autovacuum_off() -> None:
    with connection.cursor() as cursor:
        for table in TABLES:  # before any row: a table with pending trigger events cannot be altered
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")


def analyzed(table: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_stats WHERE tablename = %s)", [table])
        return cursor.fetchone()[0]


EVERY_TENTH_PENDING = "CASE WHEN g %% 10 = 0 THEN 'pending' ELSE 'delivered' END"


@pytest.fixture
def never_analyzed() -> WebhookEndpoint:
    """MESSAGES messages to one endpoint (a tenth pending), autovacuum off, never analyzed.

    The test's transaction rolls back the rows and the storage parameters alike.
    """
    autovacuum_off()
    endpoint = make_endpoint()
    fill(endpoint, 1, MESSAGES, EVERY_TENTH_PENDING)
    assert not any(analyzed(table) for table in TABLES)
    return endpoint


@pytest.fixture
def analyzed_while_all_delivered() -> WebhookEndpoint:
    """The same backlog, on statistics taken while every message was delivered (none pending), autovacuum off.

    What a backlog looks like to the planner until autovacuum analyzes again:
    pending is a sliver of a message table at rest, often none in ANALYZE's
    sample, and a backlog of 10,000 is under autoanalyze's 10% of a large table.
    """
    autovacuum_off()
    endpoint = make_endpoint()
    fill(endpoint, 1, 100, "'delivered'")
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {MESSAGE}")
    fill(endpoint, 101, MESSAGES, EVERY_TENTH_PENDING)
    return endpoint


def claim_plan(**claim_args) -> dict:
    """The plan of the statement `delivery.claim` sends, explained with its own parameters instead of run."""
    with connection.execute_wrapper(explained_instead), pytest.raises(Explained) as explained:
        delivery.claim(**claim_args)
    return explained.value.plan


def assert_the_per_run_order_probe_uses_its_index(plan: dict) -> None:
    """No join re-reads messages per candidate through a join filter; message_run_order probes each run."""
    filtered = [n for n in nodes(plan) if "run_id" in n.get("Join Filter", "")]
    assert filtered == [], f"a join filters the run's earlier messages row by row: {json.dumps(plan, indent=1)}"
    probes = [
        n
        for n in nodes(plan)
        if n.get("Index Name") == "message_run_order" and "run_id = m.run_id" in n.get("Index Cond", "")
    ]
    assert probes, f"no probe of message_run_order by run: {json.dumps(plan, indent=1)}"


def test_the_claim_of_an_endpoint_probes_each_runs_order_by_index_on_tables_never_analyzed(never_analyzed):
    assert_the_per_run_order_probe_uses_its_index(claim_plan(endpoint_id=never_analyzed.id))


def test_the_claim_of_an_endpoint_probes_each_runs_order_by_index_on_statistics_with_nothing_pending(
    analyzed_while_all_delivered,
):
    assert_the_per_run_order_probe_uses_its_index(claim_plan(endpoint_id=analyzed_while_all_delivered.id))


def test_the_claim_of_one_message_probes_its_runs_order_by_index_on_statistics_with_nothing_pending(
    analyzed_while_all_delivered,
):
    message = WebhookMessage.objects.filter(status="pending").order_by("event_id").last()
    assert_the_per_run_order_probe_uses_its_index(claim_plan(message_id=message.id))
