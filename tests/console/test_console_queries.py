"""Query counts of the console's busiest pages are pinned and do not grow with the rows behind them."""

import pytest
from django.test import Client

from tests.helpers import call, member, pause, post

# session + user + memberships, then the page's own reads.
INBOX_QUERIES = 4
DASHBOARD_QUERIES = 9  # the at-risk count (issue 54) is one capped COUNT, whatever the rows


@pytest.fixture
def alice(db):
    c = Client()
    c.force_login(member("alice", {"acme": ["approver"]}, is_staff=True))
    return c


def approvals(engine, n):
    for i in range(n):
        pause(engine, reason="approval", pending=[call(f"c{i}"), call(f"d{i}", name="wire")], ttl_seconds=600 + i)


def resume_one(engine):
    s = pause(engine, ttl_seconds=300)
    body = {"version": {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"]}}
    post(engine, f"/api/v1/runs/{s['run_id']}/resume", {**body, "results": [{"call_id": "c1", "content": "ok"}]})


@pytest.mark.parametrize("rows", [1, 12])
def test_the_inbox_takes_the_same_few_queries_for_any_number_of_rows(
    engine, alice, rows, django_assert_max_num_queries
):
    approvals(engine, rows)
    with django_assert_max_num_queries(INBOX_QUERIES):
        response = alice.get("/console/approvals/?tool=refund")
    assert len(response.context["rows"]) == rows


@pytest.mark.parametrize("rows", [1, 12])
def test_the_dashboard_takes_the_same_few_queries_for_any_number_of_rows(
    engine, alice, rows, django_assert_max_num_queries
):
    approvals(engine, rows)
    for _ in range(rows):
        resume_one(engine)
    with django_assert_max_num_queries(DASHBOARD_QUERIES):
        response = alice.get("/console/")
    assert len(response.context["expiring"]) == min(rows, 8)
    assert response.context["chart"]["series"][1]["total"] == rows
