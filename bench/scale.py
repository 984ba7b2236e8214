"""Issue 55, point 4: what each page and pass costs at 10 million events, 1 million runs and 100,000 pending pauses,
beside the same at 10,000 events.

Two fills of the same shape, in two databases of one PostgreSQL server (a
private one by default, bench/private_pg.py: fsync off, autovacuum off, the
fill analyzed once):

- small: 1,000 runs, all in workspace `acme`, 10 events each (10,000 events),
  every tenth run paused (100 pending pauses: a third each approval, external
  tool, agent reply, the approvals with their pending approval request);
- big: `--scale` x 1,000,000 runs (1,000,000 at 1.0) with the same 1,000
  `acme` runs spread evenly among them, the others in 997 other workspaces;
  10 events each and every tenth paused, as above (10,000,000 events and
  99,100 pending pauses at 1.0: the acme runs take the place of 1,000 others,
  of which 900 would not have been paused). Events span the last `--days`
  days (by default as many days as thousands of runs, so both fills have
  10,000 events a day: the dashboard's chart of the last 24 hours reads as
  many in both). Into a partitioned events table the rows go wherever its
  partitions (or its DEFAULT partition) take them.

The fill is set-based SQL (generate_series), inserted through each table's
name, so it works whether the events table is partitioned or not. Its event
hashes are stand-ins (md5 text of the right length): nothing timed here
verifies a chain, and `verify_audit` would report every filled run broken.

What is timed, in this process through Django's test client (the server's
work without HTTP), each as the median of `--requests` calls in a round, the
two fills interleaved round by round (their order alternating), the ratio
big/small taken inside each round and reported as the median of the rounds
(their range in brackets); target: at most 1.2 for every row:

- as the `acme` approver/auditor/engine (a scoped user: its rows are the same
  1,000 runs in both fills): the API inbox, the console inbox, a run's console
  page and its API events, the scope's audit export (10,000 events, read to
  the end), a one-shot resume (T3) of an external-tool pause;
- the sweep pass (services.expire_suspensions) with nothing due, and with one
  `acme` pause made due before each pass;
- as a superuser (the views over every scope): the admin's run list and
  event list, and the console dashboard; the dashboard also as the `acme`
  staff user.

    .venv/bin/python bench/scale.py [--scale 1.0] [--rounds 7] [--requests 7] [--server URL] [--reuse]

`--server URL`: use that PostgreSQL server (databases `scale_small_bench` and
`scale_big_bench` are created there) instead of a private one; `--reuse`
keeps a fill already there (the pauses a resume or an expiry consumed are not
put back: `--reuse` is for developing the timed part).
"""

import json
import statistics
import sys
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import common

ACME = "acme"
ACME_RUNS = 1_000
EVENTS_PER_RUN = 10
FULL_RUNS = 1_000_000
OTHER_WORKSPACES = 997
# Kinds of the ten events of a run, in order; the tenth is the run's last transition.
KINDS = ["registered", "suspended", "approved", "admitted", "started", "suspended", "resumed", "admitted", "started"]
FINAL = {
    "paused": "suspended",
    "completed": "completed",
    "failed": "failed",
    "expired": "expired",
    "running": "started",
}
PENDING = json.dumps([{"id": "c1", "name": "refund", "arguments": '{"amount": 900}'}])
PENDING_REPLY = json.dumps([{"id": "c1", "name": "refund", "arguments": '{"amount": 900}', "reply_with": "q-1"}])

# Position p (1..runs) of a run; every `stride`-th position is an acme run, numbered n = p / stride among acme's,
# the others keep n = p. Every tenth n is paused; the rest completed, failed, expired or running by n % 10.
RUN_ROWS = """
WITH g AS (
    SELECT p, (p %% %(stride)s = 0) AS acme, CASE WHEN p %% %(stride)s = 0 THEN p / %(stride)s ELSE p END AS n
    FROM generate_series(%(first)s, %(last)s) AS p
)
INSERT INTO suspensions_run (id, scope, scope_l1, scope_l2, scope_l3, agent_id, session_id, state, revision, error,
                             last_reason, created_at, updated_at, has_early_results, tags)
SELECT (lpad(to_hex(p), 12, '0') || '7' || substr(md5('run' || p), 1, 19))::uuid,
       sc, sc, '', '', 'agent-' || (n %% 20), '',
       st, %(events)s, CASE WHEN st = 'failed' THEN 'the tool said no' ELSE '' END,
       CASE WHEN st = 'paused' THEN (ARRAY['approval', 'external_tool', 'agent_reply'])[(n / 10) %% 3 + 1]
            ELSE 'external_tool' END,
       at, at + interval '9 seconds', false, '{}'
FROM (
    SELECT p, n, CASE WHEN acme THEN 'acme' ELSE 'ws-' || (p %% %(workspaces)s) END AS sc,
           CASE WHEN n %% 10 = 0 THEN 'paused' WHEN n %% 10 <= 6 THEN 'completed' WHEN n %% 10 = 7 THEN 'failed'
                WHEN n %% 10 = 8 THEN 'expired' ELSE 'running' END AS st,
           now() - %(span)s * interval '1 second' + p * (%(span)s::float / %(runs)s) * interval '1 second' AS at
    FROM g
) AS r
"""

# Ten events per run, in id order run after run (the run's id is rebuilt from its position, as above).
EVENT_ROWS = """
INSERT INTO suspensions_event (run_id, scope, scope_l1, scope_l2, scope_l3, kind, actor, revision, data, at,
                               prev_hash, hash)
SELECT r.id, r.scope, r.scope_l1, '', '', CASE WHEN k = 9 THEN %(final)s::jsonb ->> r.state ELSE (%(kinds)s::text[])[k + 1] END,
       'token:engine', k + 1, jsonb_build_object('n', k, 'reason', r.last_reason), r.created_at + k * interval '1 second',
       CASE WHEN k = 0 THEN repeat('0', 64) ELSE md5(r.id::text || (k - 1)) || md5((k - 1) || r.id::text) END,
       md5(r.id::text || k) || md5(k || r.id::text)
FROM generate_series(%(first)s, %(last)s) AS p
JOIN suspensions_run r ON r.id = (lpad(to_hex(p), 12, '0') || '7' || substr(md5('run' || p), 1, 19))::uuid,
     generate_series(0, 9) AS k
ORDER BY p, k
"""

PAUSE_ROWS = """
INSERT INTO suspensions_suspension (id, run_id, scope, scope_l1, scope_l2, scope_l3, reason, pending, continuation,
                                    tool_names, reply_with, correlation_id, engine_version, expires_at, deadline,
                                    created_at, tags)
SELECT md5('pause' || r.id::text)::uuid, r.id, r.scope, r.scope_l1, '', '', r.last_reason,
       CASE WHEN r.last_reason = 'agent_reply' THEN %(pending_reply)s ELSE %(pending)s END, %(continuation)s,
       ',refund,', CASE WHEN r.last_reason = 'agent_reply' THEN 'q-1' ELSE '' END, '', '', d, d, r.updated_at, '{}'
FROM suspensions_run r,
     LATERAL (SELECT now() + interval '1 day' + (hashtext(r.id::text) & 65535) * interval '1 second' AS d) AS dl
WHERE r.state = 'paused'
"""

APPROVAL_ROWS = """
INSERT INTO suspensions_approval (suspension_id, run_id, scope, scope_l1, scope_l2, scope_l3, status, decided_by,
                                  note, created_at, agent_id, pending, requested_by, quorum, exclude_requester,
                                  on_expiry, final_calls, response, expires_at, floor_scopes, require_linked_person,
                                  tags, escalation, escalation_step)
SELECT s.id, s.run_id, s.scope, s.scope_l1, '', '', 'pending', '', '', s.created_at, r.agent_id, s.pending,
       'token:engine', 1, false, 'expire', '', '', s.expires_at, '', false, '{}', '', 0
FROM suspensions_suspension s JOIN suspensions_run r ON r.id = s.run_id
WHERE s.reason = 'approval'
"""

CONSUMABLE = 33
FILL_CHUNK = 100_000  # runs per transaction (a million events)


def fill(runs: int, days: float) -> dict[str, Any]:
    """Fill the current database with `runs` runs (the acme 1,000 spread among them); returns the seconds taken."""
    from django.db import connection, transaction

    common.reset_tables()
    params = {
        "stride": runs // ACME_RUNS,
        "workspaces": OTHER_WORKSPACES,
        "events": EVENTS_PER_RUN,
        "span": days * 86400,
        "runs": runs,
        "kinds": KINDS,
        "final": json.dumps(FINAL),
        "pending": PENDING,
        "pending_reply": PENDING_REPLY,
        "continuation": json.dumps(common.continuation(), separators=(",", ":")),
    }
    took: dict[str, float] = {}
    t0 = time.perf_counter()
    for first in range(1, runs + 1, FILL_CHUNK):
        last = min(runs, first + FILL_CHUNK - 1)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(RUN_ROWS, {**params, "first": first, "last": last})
            cursor.execute(EVENT_ROWS, {**params, "first": first, "last": last})
        print(f"  runs {last:,} of {runs:,} ({time.perf_counter() - t0:.0f} s)", flush=True)
    took["runs and events"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(PAUSE_ROWS, params)
        cursor.execute(APPROVAL_ROWS)
    took["pauses and approvals"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    with common.connect(CURRENT["url"], autocommit=True) as pg:
        common.vacuum_tables(pg)
    took["vacuum analyze"] = time.perf_counter() - t2
    return {k: round(v, 1) for k, v in took.items()}


def counts() -> dict[str, int]:
    from django.db import connection

    out = {}
    with connection.cursor() as cursor:
        for name, sql in (
            ("events", "SELECT count(*) FROM suspensions_event"),
            ("runs", "SELECT count(*) FROM suspensions_run"),
            ("pending pauses", "SELECT count(*) FROM suspensions_suspension"),
            ("acme events", "SELECT count(*) FROM suspensions_event WHERE scope_l1 = 'acme'"),
        ):
            cursor.execute(sql)
            out[name] = cursor.fetchone()[0]
    return out


def table_megabytes() -> dict[str, list[int]]:
    """[table, indexes] in MB of each filled table (docs/deploy.md, "Capacity")."""
    from django.db import connection

    out = {}
    with connection.cursor() as cursor:
        for name in ("suspensions_event", "suspensions_run", "suspensions_suspension", "suspensions_approval"):
            # A partitioned table's rows are in its partitions: the tree sums them (a plain table is its own tree).
            cursor.execute(
                "SELECT sum(pg_table_size(c.oid)), sum(pg_indexes_size(c.oid)) FROM pg_class c WHERE c.oid = %s::regclass"
                " OR c.oid IN (SELECT relid FROM pg_partition_tree(%s::regclass))",
                [name, name],
            )
            table, indexes = cursor.fetchone()
            out[name] = [int(table) // 2**20, int(indexes) // 2**20]
    return out


# -- switching between the two databases ---------------------------------------------------------------------------

CURRENT = {"url": ""}


def use(url: str) -> None:
    """Point Django's default connection (and its pool) at `url`'s database."""
    from django.db import connection

    connection.close()
    connection.close_pool()
    connection.settings_dict["NAME"] = common.conninfo(url)["dbname"]
    CURRENT["url"] = url


# -- who calls --------------------------------------------------------------------------------------------------


def actors() -> dict[str, Any]:
    """Tokens and console users of this database: acme's approver, auditor and engine, a superuser, acme's staff."""
    from django.contrib.auth import get_user_model

    from suspensions.models import Membership

    user_model = get_user_model()
    user_model.objects.filter(username__in=["scale-root", "scale-acme"]).delete()
    root = user_model.objects.create_superuser(username="scale-root", password="x", email="")
    staff = user_model.objects.create_user(username="scale-acme", password="x", is_staff=True)
    for role in ("approver", "auditor", "operator"):
        membership = Membership(user=staff, role=role)
        membership.stamp_scope(ACME)
        membership.save()
    return {
        "approver": common.make_token(ACME, ["approver"], "scale-approver"),
        "auditor": common.make_token(ACME, ["auditor"], "scale-auditor"),
        "engine": common.make_token(ACME, ["engine"], "scale-engine"),
        "root": root,
        "staff": staff,
    }


class Fill:
    """One database's fill, its callers and the acme rows the timed calls use."""

    def __init__(self, name: str, url: str) -> None:
        self.name, self.url = name, url
        self.who: dict[str, Any] = {}
        self.clients: dict[str, Any] = {}
        self.run_id = ""
        self.resumable: list[tuple[str, str, int]] = []
        self.expirable: list[str] = []

    def prepare(self) -> None:
        from django.db import connection
        from django.test import Client

        self.who = actors()
        api = {k: Client(HTTP_AUTHORIZATION=f"Bearer {self.who[k]}") for k in ("approver", "auditor", "engine")}
        root, staff = Client(), Client()
        root.force_login(self.who["root"])
        staff.force_login(self.who["staff"])
        self.clients = {**api, "root": root, "staff": staff}
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM suspensions_run WHERE scope_l1 = 'acme' AND state = 'completed' ORDER BY id LIMIT 1"
            )
            self.run_id = str(cursor.fetchone()[0])
            cursor.execute(
                "SELECT s.run_id, s.id, r.revision FROM suspensions_suspension s JOIN suspensions_run r"
                " ON r.id = s.run_id WHERE s.scope_l1 = 'acme' AND s.reason = 'external_tool' AND r.state = 'paused'"
                " ORDER BY s.id"
            )
            self.resumable = [(str(a), str(b), c) for a, b, c in cursor.fetchall()]
            cursor.execute(
                "SELECT s.id FROM suspensions_suspension s JOIN suspensions_run r ON r.id = s.run_id"
                " WHERE s.scope_l1 = 'acme' AND s.reason <> 'external_tool' AND r.state = 'paused' ORDER BY s.id"
            )
            self.expirable = [str(row[0]) for row in cursor.fetchall()]


# -- what is timed ------------------------------------------------------------------------------------------------


def get(client: Any, path: str, *, stream: bool = False) -> int:
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, getattr(response, "content", b"")[:300])
    if stream:
        return sum(len(chunk) for chunk in response.streaming_content)
    return len(response.content)


def resume(f: Fill) -> None:
    run_id, pause_id, revision = f.resumable.pop()
    body = {
        "version": {"run_id": run_id, "suspension_id": pause_id, "run_revision": revision},
        "results": [{"call_id": "c1", "content": "done"}],
    }
    response = f.clients["engine"].post(
        f"/api/v1/runs/{run_id}/resume", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code in (200, 201), response.content[:300]


def sweep_one(f: Fill) -> Callable[[], None]:
    """Make one acme pause due (outside the timing), then the pass that expires it."""
    from django.db import connection

    from suspensions import services

    pause_id = f.expirable.pop()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE suspensions_suspension SET expires_at = now() - interval '1 second' WHERE id = %s", [pause_id]
        )

    def run() -> None:
        result = services.expire_suspensions()
        assert result.expired == 1, result

    return run


def sweep_empty() -> None:
    from suspensions import services

    result = services.expire_suspensions()
    assert result.expired == 0, result


def views(f: Fill) -> dict[str, tuple[Callable[[], Any], bool]]:
    """name -> (the call, whether it consumes a pause: those get a fresh one before each call)."""
    from django.urls import reverse

    c = f.clients
    return {
        "API inbox (acme approver)": (lambda: get(c["approver"], "/api/v1/approvals"), False),
        "console inbox (acme staff)": (lambda: get(c["staff"], reverse("console:inbox")), False),
        "console run list (acme staff)": (lambda: get(c["staff"], reverse("console:runs")), False),
        "admin event list (acme staff)": (lambda: get(c["staff"], "/admin/suspensions/event/"), False),
        "console run page (acme staff)": (lambda: get(c["staff"], reverse("console:run", args=[f.run_id])), False),
        "API run events (acme auditor)": (lambda: get(c["auditor"], f"/api/v1/runs/{f.run_id}/events"), False),
        "export of acme (10,000 events)": (
            lambda: get(c["auditor"], "/api/v1/audit/export?scope=acme", stream=True),
            False,
        ),
        "resume (T3, acme engine)": (lambda: resume(f), True),
        "sweep pass, nothing due": (sweep_empty, False),
        "sweep pass, one due": (lambda: None, True),
        "admin run list (superuser)": (lambda: get(c["root"], "/admin/suspensions/run/"), False),
        "admin event list (superuser)": (lambda: get(c["root"], "/admin/suspensions/event/"), False),
        "console dashboard (superuser)": (lambda: get(c["root"], reverse("console:dashboard")), False),
        "console dashboard (acme staff)": (lambda: get(c["staff"], reverse("console:dashboard")), False),
    }


def time_view(f: Fill, name: str, call: Callable[[], Any], consumes: bool, n: int, rounds: int) -> list[float]:
    lat = []
    if consumes:
        n = min(n, CONSUMABLE // rounds)  # acme has 33 pauses to resume and 67 to expire, in all rounds together
        sweep_empty()  # warm: the first call after switching databases opens the connection
    else:
        call()
    for _ in range(n):
        run = sweep_one(f) if name.startswith("sweep pass, one") else call
        t0 = time.perf_counter()
        run()
        lat.append(time.perf_counter() - t0)
    return lat


def slowest_queries(f: Fill, call: Callable[[], Any], top: int = 3) -> list[tuple[float, str]]:
    """The statements of one call, slowest first (what to read when a ratio is over)."""
    from django.db import connection

    found: list[tuple[float, str]] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            found.append((round((time.perf_counter() - t0) * 1000, 2), sql[:300]))

    with connection.execute_wrapper(wrapper):
        call()
    return sorted(found, reverse=True)[:top]


def main() -> dict[str, Any]:
    p = common.parser(__doc__.splitlines()[0])
    p.set_defaults(rounds=7)
    p.add_argument("--scale", type=float, default=1.0, help="the big fill's size: 1.0 is 1,000,000 runs")
    p.add_argument("--requests", type=int, default=7, help="calls per view per round (their median is the round's)")
    p.add_argument(
        "--days", type=float, default=0.0, help="the big fill's span of events (default: one day a 1,000 runs)"
    )
    p.add_argument("--server", default="", help="a PostgreSQL server URL instead of a private one")
    p.add_argument("--reuse", action="store_true", help="keep the fills already in --server's databases")
    args = p.parse_args()
    big_runs = max(ACME_RUNS * 10, int(FULL_RUNS * args.scale) // ACME_RUNS * ACME_RUNS)
    args.days = args.days or big_runs / ACME_RUNS
    private = None
    if args.server:
        server = args.server
    else:
        sys.path.insert(0, str(common.ROOT / "bench"))
        from private_pg import PrivatePostgres

        private = PrivatePostgres(
            settings={
                "shared_buffers": "1GB",
                "max_wal_size": "8GB",
                "autovacuum": "off",
                "checkpoint_timeout": "30min",
                "maintenance_work_mem": "512MB",
            }
        )
        server = private.url()
    try:
        return measure(args, server, big_runs)
    finally:
        if private is not None:
            private.close()


def db_url(server: str, name: str) -> str:
    parts = urllib.parse.urlsplit(server)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def measure(args: Any, server: str, big_runs: int) -> dict[str, Any]:
    common.setup_django(db_url(server, "suspensions_scale_small_bench"), migrate=False)
    from django.conf import settings
    from django.test.utils import override_settings

    # Pages rendered without collectstatic's manifest (as the tests do), for Django's test client's host.
    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    with override_settings(
        STORAGES={**settings.STORAGES, "staticfiles": plain}, ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, "testserver"]
    ):
        return measured(args, server, big_runs)


def measured(args: Any, server: str, big_runs: int) -> dict[str, Any]:
    fills = {
        "small": Fill("small", db_url(server, "suspensions_scale_small_bench")),
        "big": Fill("big", db_url(server, "suspensions_scale_big_bench")),
    }
    sizes = {"small": ACME_RUNS, "big": big_runs}
    loads: dict[str, Any] = {}
    for name, f in fills.items():
        common.ensure_database(f.url, fresh=not args.reuse)
        use(f.url)
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        if not args.reuse:
            print(f"filling {name}: {sizes[name]:,} runs", flush=True)
            loads[name] = fill(sizes[name], args.days if name == "big" else 1.0)
            print(f"  {loads[name]}", flush=True)
        loads.setdefault(name, {})["rows"] = counts()
        loads[name]["megabytes"] = table_megabytes()
        print(f"{name}: {loads[name]['rows']}", flush=True)
        f.prepare()
    import logging

    logging.getLogger("suspensions").setLevel(logging.WARNING)  # no log line per timed request or transition
    for name, f in fills.items():  # one untimed pass over every view: caches, the pool, the pages' first render
        use(f.url)
        for view, (call, consumes) in views(f).items():
            if not consumes:
                call()
    samples: dict[str, dict[str, list[float]]] = {"small": {}, "big": {}}
    per_round: dict[str, list[float]] = {}
    # Interleaved view by view: the two fills' calls of one view run seconds apart (the machine is shared and its
    # load drifts), the fill that goes first alternating from round to round.
    names = list(views(fills["small"]))
    for round_no in range(args.rounds):
        order = ["small", "big"] if round_no % 2 == 0 else ["big", "small"]
        for view in names:
            medians: dict[str, float] = {}
            for name in order:
                f = fills[name]
                use(f.url)
                call, consumes = views(f)[view]
                lat = time_view(f, view, call, consumes, args.requests, args.rounds)
                samples[name].setdefault(view, []).extend(lat)
                medians[name] = statistics.median(lat)
            per_round.setdefault(view, []).append(medians["big"] / medians["small"])
        print(
            f"round {round_no + 1}: " + ", ".join(f"{v.split(' (')[0]} {r[-1]:.2f}" for v, r in per_round.items()),
            flush=True,
        )
    slow: dict[str, Any] = {}
    use(fills["big"].url)
    for view, (call, consumes) in views(fills["big"]).items():
        if not consumes and common.median(per_round[view]) > 1.2:
            slow[view] = slowest_queries(fills["big"], call)
    rows = []
    for view, ratios in per_round.items():
        small_ms = common.ms(statistics.median(samples["small"][view]))
        big_ms = common.ms(statistics.median(samples["big"][view]))
        ratio = common.median(ratios)
        rows.append(
            [
                view,
                small_ms,
                big_ms,
                f"{ratio:.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
                "yes" if ratio <= 1.2 else "**no**",
            ]
        )
    data = {
        "machine": common.machine(),
        "args": vars(args),
        "big_runs": big_runs,
        "fills": loads,
        "ratios": per_round,
        "median_ms": {n: {v: common.ms(statistics.median(s)) for v, s in samples[n].items()} for n in samples},
        "slowest_queries_over_target": slow,
    }
    big_rows = loads["big"]["rows"]
    fill_seconds = "; ".join(
        f"{n} {', '.join(f'{k} {v} s' for k, v in took.items() if k not in ('rows', 'megabytes'))}"
        for n, took in loads.items()
        if len(took) > 2
    )
    command = " ".join(["bench/scale.py", *sys.argv[1:]])
    md = "\n".join(
        [
            f"### Scale: {big_rows['events']:,} events, {big_rows['runs']:,} runs, {big_rows['pending pauses']:,} "
            f"pending pauses beside {loads['small']['rows']['events']:,} events (`{command}`: median ms of "
            f"{args.requests} calls x {args.rounds} rounds, {data['machine']['nproc']} cores, PostgreSQL "
            f"{data['machine']['postgresql'].split(' ')[0]}; fill: {fill_seconds})",
            "",
            common.table(["view", "10k events ms", "big ms", "big / 10k (rounds)", "within 1.2x"], rows),
        ]
    )
    for view, queries in slow.items():  # printed and kept in the JSON, not written into the docs
        print(f"\nSlowest statements of {view} (big fill): " + "; ".join(f"{t} ms `{q[:160]}`" for t, q in queries))
    common.write_result("scale", data, md)
    return data


if __name__ == "__main__":
    main()
