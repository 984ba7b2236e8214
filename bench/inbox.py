"""Issue 8.5: the approval inbox at scale.

100,000 pending approvals in one scope (`inbox`) among 1,000,000 pauses
(bulk-loaded with generate_series): 10,000 approvals in the same scope whose
run was already claimed (not pending, interleaved in deadline order), 90,000
external-tool pauses in the same scope, the rest spread over 97 other scopes
and all three reasons. Deadlines are distinct and shuffled.

Measured over HTTP (gunicorn, one keep-alive client) for the first page of
`GET /api/v1/approvals`, a page reached by following `next`, and the last
page (a reverse cursor built for the tail): statements per request through
the counting proxy (must not grow with depth), and p50/p95 against the same
SELECT replayed through raw psycopg. The console inbox (/console/approvals/)
is measured the same way when its URL exists.

    .venv/bin/python bench/inbox.py [--rows 1000000] [--approvals 100000] [--requests 100]
"""

import base64
import json
import time
import urllib.parse
from typing import Any

import common

SCOPE = "inbox"

LOAD_RUNS = """
INSERT INTO suspensions_run (id, scope, scope_l1, scope_l2, scope_l3, agent_id, session_id, state, revision,
                             error, last_reason, created_at, updated_at)
SELECT md5('run' || i)::uuid, sc, sc, '', '', 'agent-' || (i %% 20), '',
       CASE WHEN i > %(pending)s AND i <= %(claimed)s THEN 'running' ELSE 'paused' END,
       2, '', rs, now(), now()
FROM (
  SELECT i,
         CASE WHEN i <= %(same_scope)s THEN 'inbox' ELSE 'other-' || (i %% 97) END AS sc,
         CASE WHEN i <= %(claimed)s THEN 'approval' WHEN i <= %(same_scope)s THEN 'external_tool'
              WHEN i %% 3 = 0 THEN 'approval' WHEN i %% 3 = 1 THEN 'external_tool' ELSE 'agent_reply' END AS rs
  FROM generate_series(1, %(rows)s) AS i
) AS g
"""

LOAD_SUSPENSIONS = """
INSERT INTO suspensions_suspension (id, scope, scope_l1, scope_l2, scope_l3, run_id, reason, pending, continuation,
                                    tool_names, reply_with, correlation_id, expires_at, deadline, created_at)
SELECT md5('sus' || r.n)::uuid, r.scope, r.scope_l1, '', '', r.id, r.last_reason, %(pending_text)s,
       %(continuation)s, ',refund,', CASE WHEN r.last_reason = 'agent_reply' THEN 'q-' || r.n ELSE '' END, '',
       d, d, now()
FROM (SELECT *, row_number() OVER () AS n FROM suspensions_run) AS r,
     LATERAL (SELECT now() + interval '1 hour' + ((r.n * 7919) %% %(rows)s) * interval '1 second' AS d) AS dl
"""


def load(rows: int, pending: int) -> float:
    from django.db import connection

    params = {
        "rows": rows,
        "pending": pending,
        "claimed": pending + pending // 10,
        "same_scope": pending * 2,
        "pending_text": json.dumps(common.pending_call()),
        "continuation": json.dumps(common.continuation()),
    }
    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(LOAD_RUNS, params)
        cursor.execute(LOAD_SUSPENSIONS, params)
        cursor.execute(
            "INSERT INTO suspensions_approval (suspension_id, run_id, scope, scope_l1, scope_l2, scope_l3, status,"
            " decided_by, note, created_at) SELECT id, run_id, scope, scope_l1, '', '', 'pending', '', '', now()"
            " FROM suspensions_suspension WHERE reason = 'approval' AND scope_l1 = 'inbox'"
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE suspensions_run")
        cursor.execute("ANALYZE suspensions_suspension")
    return time.perf_counter() - t0


def tail_cursor() -> str:
    """A reverse cursor positioned after every deadline: DRF answers the last page of the list."""
    tokens = urllib.parse.urlencode({"r": "1", "p": "9999-12-31 23:59:59+00:00"})
    return base64.b64encode(tokens.encode()).decode()


def timed(client: common.Client, path: str, n: int) -> tuple[list[float], Any]:
    lat, body = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        status, raw = client.call("GET", path)
        lat.append(time.perf_counter() - t0)
        assert status == 200, raw[:300]
        body = raw
    return lat, body


def capture_select(path: str, headers: dict[str, str]) -> list[tuple[str, Any]]:
    """The SELECTs the page issues (token lookup aside), captured in-process from Django."""
    from django.db import connection
    from django.test import Client

    captured: list[tuple[str, Any]] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        response = Client(**headers).get(path)
    assert response.status_code == 200, response.content[:300]
    return [(sql, p) for sql, p in captured if "suspensions_suspension" in sql]


def raw_timed(statements: list[tuple[str, Any]], n: int) -> list[float]:
    from resume import raw_connection

    lat = []
    with raw_connection() as conn:
        for _ in range(n):
            t0 = time.perf_counter()
            with conn.transaction():
                for sql, params in statements:
                    conn.execute(sql, params).fetchall()
            lat.append(time.perf_counter() - t0)
    return lat


def stats(lat: list[float]) -> dict[str, float]:
    return {"p50_ms": common.ms(common.percentile(lat, 50)), "p95_ms": common.ms(common.percentile(lat, 95))}


def console_session() -> str | None:
    """A session cookie for a staff approver in `inbox`, when the console exists."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.urls import NoReverseMatch, reverse

    try:
        reverse("console:inbox")
    except NoReverseMatch:
        return None
    from suspensions.models import Membership

    user = get_user_model().objects.create_user(username="bench-approver", password="x", is_staff=True)
    membership = Membership(user=user, role="approver")
    membership.stamp_scope(SCOPE)
    membership.save()
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key


def last_pending_id() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.id FROM suspensions_suspension s JOIN suspensions_run r ON r.id = s.run_id"
            " WHERE s.scope_l1 = %s AND s.reason = 'approval' AND r.state = 'paused'"
            " ORDER BY s.deadline DESC, s.id DESC LIMIT 1",
            [SCOPE],
        )
        return str(cursor.fetchone()[0])


def console_tail_after() -> str:
    """The console's `after` cursor for its last page: the row 50 before the end of the pending list."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.deadline, s.id FROM suspensions_suspension s JOIN suspensions_run r ON r.id = s.run_id"
            " WHERE s.scope_l1 = %s AND s.reason = 'approval' AND r.state = 'paused'"
            " ORDER BY s.deadline DESC, s.id DESC OFFSET 50 LIMIT 1",
            [SCOPE],
        )
        deadline, ident = cursor.fetchone()
    return f"{deadline.isoformat()}~{ident}"


def main() -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--approvals", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=100)
    args = p.parse_args()
    url = common.setup_django()
    common.reset_tables()
    get_user_model().objects.filter(username="bench-approver").delete()
    load_s = load(args.rows, args.approvals)
    print(f"loaded {args.rows} pauses in {load_s:.1f} s", flush=True)
    secret = common.make_token(SCOPE, ["approver"], "bench-inbox")
    tail = "/api/v1/approvals?cursor=" + urllib.parse.quote(tail_cursor())
    pages: dict[str, str] = {"api first page": "/api/v1/approvals", "api last page": tail}
    session = console_session()
    cookies = {}
    if session:
        pages["console first page"] = "/console/approvals/"
        pages["console last page"] = "/console/approvals/?" + urllib.parse.urlencode({"after": console_tail_after()})
    results: dict[str, Any] = {}
    with common.Gunicorn(url, workers=1, threads=2) as server:
        client = common.Client(server.port, secret)
        _, first = client.call("GET", "/api/v1/approvals")
        following = json.loads(first)["next"]
        pages["api page reached by following next"] = following.split("127.0.0.1", 1)[-1].split(str(server.port), 1)[-1]
        for name, path in pages.items():
            c = client
            if name.startswith("console"):
                c = common.Client(server.port, secret)
                c.headers = {"Cookie": f"sessionid={session}"}
                cookies[name] = c
            lat, body = timed(c, path, args.requests)
            results[name] = {"http": stats(lat), "bytes": len(body)}
            if name.startswith("api"):
                rows = json.loads(body)["results"]
                results[name]["rows"] = len(rows)
                results[name]["last_row_id"] = rows[-1]["id"] if rows else None
        client.close()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    for name, path in pages.items():
        h = headers if name.startswith("api") else {"HTTP_COOKIE": f"sessionid={session}"}
        statements = capture_select(path, h)
        results[name]["raw"] = stats(raw_timed(statements, args.requests))
        results[name]["p95_over_raw"] = round(
            results[name]["http"]["p95_ms"] / max(results[name]["raw"]["p95_ms"], 1e-9), 2
        )
        results[name]["selects_replayed"] = len(statements)
    tail_ok = results["api last page"]["last_row_id"] == last_pending_id()
    assert tail_ok, "the built tail cursor did not answer the last page"
    results_counts = count_statements(url, secret, session, pages)
    for name, counts in results_counts.items():
        results[name]["counts"] = counts
    data = {"machine": common.machine(), "args": vars(args), "load_seconds": round(load_s, 1), "pages": results}
    md = "\n".join(
        [
            f"### Inbox at scale ({args.approvals} pending approvals in one scope among {args.rows} pauses; {args.requests} requests per page, one client)",
            "",
            common.table(
                [
                    "page",
                    "http p50 ms",
                    "http p95 ms",
                    "raw SELECT p50 ms",
                    "raw SELECT p95 ms",
                    "p95 http/raw",
                    "statements",
                    "round trips",
                ],
                [
                    [
                        name,
                        r["http"]["p50_ms"],
                        r["http"]["p95_ms"],
                        r["raw"]["p50_ms"],
                        r["raw"]["p95_ms"],
                        r["p95_over_raw"],
                        r["counts"]["statements"],
                        r["counts"]["round_trips"],
                    ]
                    for name, r in results.items()
                ],
            ),
            "",
            f"Bulk load (generate_series, then ANALYZE): {load_s:.0f} s.",
        ]
    )
    common.write_result("inbox", data, md)
    return data


def count_statements(url: str, secret: str, session: str | None, pages: dict[str, str]) -> dict[str, Any]:
    info = common.conninfo(url)
    proxy = common.CountingProxy(info["host"], info["port"])
    out = {}
    try:
        with common.Gunicorn(common.with_port(url, proxy.port), workers=1, threads=1) as server:
            client = common.Client(server.port, secret)
            console = common.Client(server.port, secret)
            console.headers = {"Cookie": f"sessionid={session}"}
            for name, path in pages.items():
                c = console if name.startswith("console") else client
                c.call("GET", path)  # warm: the first request of a worker opens its connection
                before = proxy.snapshot()
                for _ in range(5):
                    c.call("GET", path)
                    time.sleep(0.01)
                out[name] = common.per_op(before, proxy.snapshot(), 5)
            client.close()
            console.close()
    finally:
        proxy.close()
    return out


if __name__ == "__main__":
    main()
