"""Reads that may lag go to a real streaming replica; claims, locks and reads of one's own write never do
(docs/deploy.md, "Read replicas").

A private primary (bench/private_pg.py, never the shared server) and a hot standby made from it with
`pg_basebackup -R`; one gunicorn serves with DATABASE_URL on the primary and DATABASE_REPLICA_URL on the standby.
The standby's replay is paused on purpose (`pg_wal_replay_pause()`), so what it answers is visibly behind: the
lists, the inbox and the export are then one step old, while a pause's own page, a decision and the run after it
are current.
"""

import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from common import Gunicorn  # noqa: E402
from private_pg import PrivatePostgres  # noqa: E402

from tests.helpers import call, continuation  # noqa: E402

pytestmark = pytest.mark.slow


def manage(url: str, *args: str) -> str:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "replica-test", "DJANGO_DEBUG": "0"}
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def token(url: str, roles: str) -> str:
    return manage(url, "createtoken", "--scope", "acme", "--roles", roles, "--name", roles).split()[-1]


class Api:
    def __init__(self, port: int, secret: str) -> None:
        self.port, self.secret = port, secret

    def send(self, method: str, path: str, body: object = None, cookie: str | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Authorization": f"Bearer {self.secret}", "Content-Type": "application/json"}
        if cookie:
            headers["Cookie"] = cookie
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        return response.status, response.getheader("Set-Cookie"), raw

    def json(self, method: str, path: str, body: object = None, expect: int = 200, cookie: str | None = None):
        status, set_cookie, raw = self.send(method, path, body, cookie)
        assert status == expect, raw
        return json.loads(raw), set_cookie


def lsn(url: str, query: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query).fetchone()[0]


def caught_up(primary: str, replica: str) -> None:
    """Wait until the standby has replayed everything the primary wrote so far."""
    target = lsn(primary, "SELECT pg_current_wal_lsn()::text")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with psycopg.connect(replica, autocommit=True) as conn:
            behind = conn.execute("SELECT pg_wal_lsn_diff(%s, pg_last_wal_replay_lsn()) > 0", [target]).fetchone()[0]
        if not behind:
            return
        time.sleep(0.05)
    raise AssertionError("the replica did not catch up")


def replay(replica: str, on: bool) -> None:
    with psycopg.connect(replica, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_resume()" if on else "SELECT pg_wal_replay_pause()")


@pytest.fixture(scope="module")
def served():
    with PrivatePostgres() as primary:
        url = primary.createdb("suspensions_replica")
        manage(url, "migrate", "--noinput")
        secrets = {role: token(url, role) for role in ("engine", "approver", "auditor")}
        standby = PrivatePostgres.replica_of(primary)
        try:
            replica_url = standby.url("suspensions_replica")
            caught_up(url, replica_url)
            web = Gunicorn(url, workers=1, threads=4, env={"DATABASE_REPLICA_URL": replica_url})
            try:
                yield url, replica_url, {role: Api(web.port, s) for role, s in secrets.items()}, standby
            finally:
                web.stop()
        finally:
            standby.close()


def approval(engine: Api, agent: str) -> dict:
    run, _ = engine.json("POST", "/api/v1/runs", {"agent_id": agent}, expect=201)
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": [call("c1", "send_refund", '{"amount": 900}')],
        "continuation": continuation(),
    }
    paused, _ = engine.json("POST", f"/api/v1/runs/{run['id']}/suspend", body, expect=201)
    return paused


def inbox(api: Api, cookie: str | None = None) -> set[str]:
    page, _ = api.json("GET", "/api/v1/approvals", cookie=cookie)
    return {row["id"] for row in page["results"]}


def exported_runs(auditor: Api) -> set[str]:
    status, _, raw = auditor.send("GET", "/api/v1/audit/export")
    assert status == 200, raw
    return {json.loads(line)["run_id"] for line in raw.splitlines() if "run_id" in json.loads(line)}


def test_lists_read_the_replica_and_claims_the_primary(served):
    primary, replica, api, _ = served
    engine, approver, auditor = api["engine"], api["approver"], api["auditor"]
    first = approval(engine, "agent-first")
    caught_up(primary, replica)
    assert first["id"] in inbox(approver)

    replay(replica, on=False)  # from here on the replica is behind until resumed
    try:
        second = approval(engine, "agent-second")
        # The inbox and the export read the replica: the new pause is not there yet.
        assert inbox(approver) == {first["id"]}
        assert second["run_id"] not in exported_runs(auditor)
        assert first["run_id"] in exported_runs(auditor)
        # A pause's own page and the claim read the primary: the pause the replica lacks is found and decided.
        detail, _ = approver.json("GET", f"/api/v1/approvals/{second['id']}")
        assert detail["status"] == "pending"
        version = {"run_id": second["run_id"], "suspension_id": second["id"], "run_revision": second["run_revision"]}
        decided, set_cookie = approver.json(
            "POST", f"/api/v1/approvals/{second['id']}/decide", {"version": version, "decision": "approve"}, expect=201
        )
        assert decided["run_state"] == "running"
        run, _ = engine.json("GET", f"/api/v1/runs/{second['run_id']}")
        assert run["state"] == "running"
        # The answer to a write pins the caller to the primary for a moment: with that cookie its list is current.
        assert set_cookie is not None and set_cookie.startswith("suspensions_primary=")
        cookie = set_cookie.split(";")[0]
        assert inbox(approver, cookie=cookie) == {first["id"]}
        decided_first, _ = approver.json(
            "POST",
            f"/api/v1/approvals/{first['id']}/decide",
            {
                "version": {
                    "run_id": first["run_id"],
                    "suspension_id": first["id"],
                    "run_revision": first["run_revision"],
                },
                "decision": "deny",
                "reason": "not now",
            },
            expect=201,
        )
        assert decided_first["run_state"] != "paused"
        assert inbox(approver, cookie=cookie) == set()
        # Without it the list still shows what the replica holds: the first pause, pending there.
        assert inbox(approver) == {first["id"]}
    finally:
        replay(replica, on=True)
    caught_up(primary, replica)
    assert inbox(approver) == set()
    assert {first["run_id"], second["run_id"]} <= exported_runs(auditor)


def test_without_a_replica_every_read_is_the_primarys():
    """No DATABASE_REPLICA_URL: no alias, no router, and a read marked as one that may lag still reads the primary."""
    from django.conf import settings

    from suspensions import replicas
    from suspensions.models import Run

    assert "replica" not in settings.DATABASES
    with replicas.reads_may_lag():
        assert Run.objects.all().db == "default"


def test_a_replica_down_fails_only_the_lists(served):
    """The lists answer the usual 503 problem with Retry-After; a pause's page and a decision go on."""
    _, _, api, standby = served
    engine, approver = api["engine"], api["approver"]
    paused = approval(engine, "agent-third")
    standby.stop("immediate")
    status, _, raw = approver.send("GET", "/api/v1/approvals")
    assert status == 503, raw
    assert json.loads(raw)["code"] == "unavailable"
    detail, _ = approver.json("GET", f"/api/v1/approvals/{paused['id']}")
    assert detail["status"] == "pending"
    version = {"run_id": paused["run_id"], "suspension_id": paused["id"], "run_revision": paused["run_revision"]}
    approver.json(
        "POST", f"/api/v1/approvals/{paused['id']}/decide", {"version": version, "decision": "approve"}, expect=201
    )
