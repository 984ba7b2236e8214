"""The admin lists, the dashboard and the export read what they show along indexes, bounded whatever the tables hold
(docs/performance.md, "At scale"; bench/scale.py measures them at 10 million events).

Two halves. What the pages show: a capped count says "more than", the workspace
filter offers the workspaces (a staff user only theirs), a choice-less filter
the values of recent rows, the dashboard "N+" past its cap. And the plans: the
tables are bulk-filled (5,000 runs, 50,000 events, every tenth run paused) and
analyzed, each page is requested with every statement it sends captured, and
each statement is explained with its own parameters: no scan of runs, pauses,
admissions or events may read the table unbounded, that is every such scan is
under a LIMIT or an index condition the planner expects to return at most
1,000 rows. A scope's export reads its page of events from the scope's own
(level, id) index, with no sort.
"""

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from suspensions import scopes
from suspensions.admin.bounded import CappedPaginator
from suspensions.console import queries
from suspensions.models import Event, Run
from tests.helpers import client, member, pause

pytestmark = pytest.mark.django_db

RUNS = 5_000
BIG_TABLES = ("suspensions_run", "suspensions_suspension", "suspensions_admission", "suspensions_event")


def logged_in(user: Any) -> Client:
    c = Client()
    c.force_login(user)
    return c


def runs_in(scope: str, n: int, state: str = "completed") -> list[Run]:
    now = timezone.now()
    made = [
        Run(agent_id="a", state=state, created_at=now, updated_at=now, **scopes.levels(scope), scope=scope)
        for _ in range(n)
    ]
    return Run.objects.bulk_create(made)


# -- what the pages show --------------------------------------------------------------------------------------------


def test_an_admin_list_counts_up_to_its_cap_then_says_there_are_more(monkeypatch):
    root = logged_in(member("root", is_staff=True, is_superuser=True))
    runs_in("acme", 2)
    html = root.get("/admin/suspensions/run/").content.decode()
    assert "2 runs" in html and "more than" not in html
    monkeypatch.setattr(CappedPaginator, "cap", 3)
    runs_in("acme", 3)
    html = root.get("/admin/suspensions/run/").content.decode()
    assert "more than 3 runs: filter or search to narrow the list" in html
    assert "5 runs" not in html


def test_the_workspace_filter_offers_the_superusers_every_workspace_and_a_staff_user_theirs():
    runs_in("acme", 1)
    runs_in("beta/support", 2)
    root = logged_in(member("root", is_staff=True, is_superuser=True))
    staff = logged_in(member("audrey", {"acme": ["auditor"]}, is_staff=True))
    html = root.get("/admin/suspensions/run/").content.decode()
    assert "?scope_l1=acme" in html and "?scope_l1=beta" in html
    html = root.get("/admin/suspensions/run/?scope_l1=beta").content.decode()
    assert "2 runs" in html
    html = staff.get("/admin/suspensions/run/").content.decode()
    assert "?scope_l1=acme" in html and "?scope_l1=beta" not in html and "1 run" in html


def test_the_event_kind_filter_offers_the_kinds_of_recent_events_and_filters_by_one(engine):
    pause(engine)
    root = logged_in(member("root", is_staff=True, is_superuser=True))
    html = root.get("/admin/suspensions/event/").content.decode()
    assert "?kind=registered" in html and "?kind=suspended" in html
    html = root.get("/admin/suspensions/event/?kind=suspended").content.decode()
    assert "1 event" in html
    assert Event.objects.filter(kind="suspended").count() == 1


def test_the_dashboard_counts_up_to_its_cap_and_shows_more_past_it(engine, monkeypatch):
    alice = logged_in(member("alice", {"acme": ["approver"]}, is_staff=True))
    for _ in range(3):
        pause(engine, reason="approval")
    pause(engine)
    response = alice.get("/console/")
    states = {s["state"]: s["n"] for s in response.context["states"]}
    waiting = {p["key"]: p["n"] for p in response.context["pauses"]}
    assert states["paused"] == 4 and waiting["person"] == 3 and waiting["tool"] == 1
    monkeypatch.setattr(queries, "COUNT_CAP", 2)
    response = alice.get("/console/")
    states = {s["state"]: s["n"] for s in response.context["states"]}
    waiting = {p["key"]: p["n"] for p in response.context["pauses"]}
    assert states["paused"] == "2+" and waiting["person"] == "2+" and waiting["tool"] == 1
    assert 'title="the dashboard counts each number up to 1,000">2+</span>' in response.content.decode()


# -- the plans ------------------------------------------------------------------------------------------------------


FILL = """
WITH g AS (
    SELECT p, CASE WHEN p %% 100 = 0 THEN 'acme' ELSE 'ws-' || (p %% 97) END AS sc,
           CASE WHEN p %% 10 = 0 THEN 'paused' WHEN p %% 10 < 8 THEN 'completed' ELSE 'running' END AS st,
           now() - (%(runs)s - p) * interval '1 hour' AS at
    FROM generate_series(1, %(runs)s) AS p
), runs AS (
    INSERT INTO suspensions_run (id, scope, scope_l1, scope_l2, scope_l3, agent_id, session_id, state, revision, error,
                                 last_reason, created_at, updated_at, has_early_results, tags)
    SELECT md5('run' || p)::uuid, sc, sc, '', '', 'a', '', st, 10, '', 'approval', at, at, false, '{}' FROM g
), pauses AS (
    INSERT INTO suspensions_suspension (id, run_id, scope, scope_l1, scope_l2, scope_l3, reason, pending, continuation,
                                        tool_names, reply_with, correlation_id, engine_version, expires_at, deadline,
                                        created_at, tags)
    SELECT md5('pause' || p)::uuid, md5('run' || p)::uuid, sc, sc, '', '', 'approval', '[]', '{}', '', '', '', '',
           now() + interval '1 day', now() + interval '1 day', at, '{}'
    FROM g WHERE st = 'paused'
)
INSERT INTO suspensions_event (run_id, scope, scope_l1, scope_l2, scope_l3, kind, actor, revision, data, at,
                               prev_hash, hash)
SELECT md5('run' || p)::uuid, sc, sc, '', '', (ARRAY['registered', 'suspended'])[k %% 2 + 1], 'x', k + 1, '{}',
       at + k * interval '1 second', '', ''
FROM g, generate_series(0, 9) AS k
"""


@pytest.fixture
def filled(db) -> None:
    with connection.cursor() as cursor:
        cursor.execute(FILL, {"runs": RUNS})
        for table in BIG_TABLES:
            cursor.execute(f"ANALYZE {table}")


def statements(send: Any) -> list[tuple[str, Any]]:
    """Every statement `send()` sends to the database, with its parameters."""
    sent: list[tuple[str, Any]] = []

    def wrapper(execute, sql, params, many, context):
        sent.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        send()
    return sent


def plan_of(sql: str, params: Any) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        return cursor.fetchone()[0][0]["Plan"]


def nodes(plan: dict, under_limit: bool = False) -> Iterator[tuple[dict, bool]]:
    under_limit = under_limit or plan["Node Type"] == "Limit"
    yield plan, under_limit
    for child in plan.get("Plans", ()):
        yield from nodes(child, under_limit)


def unbounded_reads(plan: dict) -> list[str]:
    """Scans of a big table (a partition of one included) neither under a LIMIT nor expected to return <= 1,000 rows
    through an index condition."""
    found = []
    for node, under_limit in nodes(plan):
        relation = node.get("Relation Name", "")
        if not relation.startswith(BIG_TABLES) or under_limit:
            continue
        if relation not in BIG_TABLES and rows_in(relation) <= RUNS:
            # A partition of a big table (a month of the events) that this fill leaves small: this month's holds
            # about 1,700 rows here, and reading it whole is the planner's right choice; its size bounds the scan.
            # tests/audit/test_event_plans.py holds the events' reads to their indexes on full months.
            continue
        indexed = "Index Cond" in node or "Recheck Cond" in node
        if not (indexed and node["Plan Rows"] <= 1_000):
            found.append(f"{node['Node Type']} on {relation} ({node['Plan Rows']} rows)")
    return found


def rows_in(relation: str) -> float:
    """The rows the planner knows `relation` holds (analyzed; an empty table, -1 or 0)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [relation])
        return cursor.fetchone()[0]


def reads_of(send: Any) -> dict[str, list[str]]:
    """Each statement of the page on a big table with its unbounded reads (empty lists when all are bounded)."""
    out = {}
    for sql, params in statements(send):
        if any(table in sql for table in BIG_TABLES):
            out[sql[:200]] = unbounded_reads(plan_of(sql, params))
    return out


@pytest.mark.parametrize("path", ["/admin/suspensions/run/", "/admin/suspensions/event/", "/console/"])
def test_the_superusers_views_over_every_scope_read_bounded(filled, path):
    root = logged_in(member("root", is_staff=True, is_superuser=True))
    found = reads_of(lambda: root.get(path))
    assert found, "the page read none of the big tables"
    assert {sql: reads for sql, reads in found.items() if reads} == {}


@pytest.mark.parametrize("path", ["/admin/suspensions/run/", "/admin/suspensions/event/", "/console/"])
def test_a_scoped_staff_users_views_read_bounded(filled, path):
    staff = logged_in(member("audrey", {"acme": ["auditor", "approver"]}, is_staff=True))
    found = reads_of(lambda: staff.get(path))
    assert {sql: reads for sql, reads in found.items() if reads} == {}


def test_a_date_filter_on_the_event_list_reads_bounded(filled):
    root = logged_in(member("root", is_staff=True, is_superuser=True))
    since = (timezone.now() - timedelta(days=7)).date().isoformat()
    found = reads_of(lambda: root.get(f"/admin/suspensions/event/?at__gte={since}"))
    assert {sql: reads for sql, reads in found.items() if reads} == {}


def test_a_scopes_export_reads_its_pages_from_the_scopes_own_index_in_id_order(filled, token):
    auditor = client(token("acme", ["auditor"]))
    sent = statements(lambda: b"".join(auditor.get("/api/v1/audit/export?scope=acme").streaming_content))
    pages = [(sql, params) for sql, params in sent if "suspensions_event" in sql and "ORDER BY" in sql]
    assert pages
    for sql, params in pages:
        scans = [node for node, _ in nodes(plan_of(sql, params)) if "Index Name" in node or "Relation Name" in node]
        # No sequential scan of a partition with rows (an empty one, next month's, is scanned for free).
        assert [n for n in scans if n["Node Type"] == "Seq Scan" and n["Plan Rows"] > 1] == []
        # The page's rows by the scope and the last id sent, from the scope's (level, id) index: a page reads the
        # rest of the scope at most (the planner sorts them when it expects few), never every tenant's events.
        # event_scope_l1_id, or on a partitioned table each partition's (named <partition>_scope_l1_id_idx).
        used = [node for node in scans if "scope_l1_id" in node.get("Index Name", "")]
        assert used
        for node in used:
            assert "scope_l1" in node["Index Cond"] and "id >" in node["Index Cond"], node["Index Cond"]


@pytest.mark.parametrize("path", ["/console/runs/", "/admin/suspensions/run/"])
def test_a_scoped_run_list_reads_its_page_from_the_scopes_own_index(filled, path):
    """Newest first along the scope's (level, id) index, not the primary key filtered tenant by tenant."""
    staff = logged_in(member("audrey", {"acme": ["auditor", "approver"]}, is_staff=True))
    sent = statements(lambda: staff.get(path))
    pages = [(sql, p) for sql, p in sent if "suspensions_run" in sql and "ORDER BY" in sql]
    assert pages
    for sql, params in pages:
        used = {node.get("Index Name", "") for node, _ in nodes(plan_of(sql, params))}
        assert "run_scope_l1_id" in used, used
