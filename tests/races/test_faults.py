"""Faults against a real gunicorn and a private PostgreSQL that the test may crash and restart.

The shared server on 5432 is never touched: bench/private_pg.py starts a
throw-away one on a free port. Two faults:

- PostgreSQL crashes (immediate stop) under resume load and comes back: while
  it is down every answer is 503 problem+json with Retry-After, the same
  gunicorn serves again without a restart, and every resume the clients were
  told about happened exactly once.
- The web worker is SIGKILLed after its transaction committed and before it
  answered; the client retries the same request and gets the original receipt
  as a replay, and nothing ran twice.
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from common import Gunicorn  # noqa: E402
from private_pg import PrivatePostgres  # noqa: E402

KILL_HEADER = "HTTP_X_TEST_KILL_AFTER_COMMIT"
_django_app = None


def killing_app(environ, start_response):
    """The project's WSGI app, plus a test hook: with X-Test-Kill-After-Commit the worker dies before answering."""
    global _django_app
    if _django_app is None:
        from django.core.wsgi import get_wsgi_application

        _django_app = get_wsgi_application()
    if environ.get(KILL_HEADER) == "1":
        b"".join(_django_app(environ, lambda *args, **kwargs: None))  # the view ran and its transaction committed
        os.kill(os.getpid(), signal.SIGKILL)
    return _django_app(environ, start_response)


def manage(url: str, *args: str) -> str:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "fault-test", "DJANGO_DEBUG": "0"}
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


@pytest.fixture(scope="module")
def private():
    with PrivatePostgres() as pg:
        url = pg.createdb("suspensions_faults")
        manage(url, "migrate", "--noinput")
        secret = manage(url, "createtoken", "--scope", "acme", "--roles", "engine", "--name", "fault").split()[-1]
        yield pg, url, secret


class Http:
    """One keep-alive connection that reconnects after the server dropped it."""

    def __init__(self, port: int, secret: str) -> None:
        self.port, self.secret, self.conn = port, secret, None

    def call(self, path: str, body: object = None, extra: dict[str, str] | None = None):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Authorization": f"Bearer {self.secret}", "Content-Type": "application/json", **(extra or {})}
        try:
            self.conn.request("POST", path, body=json.dumps(body), headers=headers)
            response = self.conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            raise


def paused(web: Http) -> dict:
    status, _, raw = web.call("/api/v1/runs", {"agent_id": "fault-agent"})
    assert status == 201, raw
    run = json.loads(raw)
    body = {
        "revision": 1,
        "reason": "external_tool",
        "pending": [{"id": "c1", "name": "refund", "arguments": "{}"}],
        "continuation": {
            "messages": [{"role": "user", "content": "hi"}],
            "system_prompt": "",
            "step_index": 0,
            "tokens_used": 0,
            "new_messages_from": 0,
            "session_id": "",
            "config": {"model": "m"},
        },
    }
    status, _, raw = web.call(f"/api/v1/runs/{run['id']}/suspend", body)
    assert status == 201, raw
    return json.loads(raw)


def resume_body(s: dict) -> dict:
    version = {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"]}
    return {"version": version, "results": [{"call_id": "c1", "content": {"paid": s["id"]}}]}


def probe(port: int, path: str, headers: dict[str, str]) -> tuple[int, str | None, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, response.getheader("Retry-After"), response.getheader("Content-Type", "")


def evidence(url: str, run_ids: list[str]) -> dict[str, tuple[int, int, list[str]]]:
    """Per run: admissions, starts, and the event kinds, read straight from the private server."""
    out = {}
    with psycopg.connect(url) as conn:
        for run_id in run_ids:
            admissions = conn.execute("SELECT count(*) FROM suspensions_admission WHERE run_id = %s", [run_id])
            starts = conn.execute("SELECT count(*) FROM suspensions_start WHERE run_id = %s", [run_id])
            kinds = conn.execute("SELECT kind FROM suspensions_event WHERE run_id = %s ORDER BY id", [run_id])
            out[run_id] = (admissions.fetchone()[0], starts.fetchone()[0], [k for (k,) in kinds.fetchall()])
    return out


def resume_until_answered(web: Http, s: dict, seen: Counter, problems: list, deadline: float) -> dict | None:
    """Send the same resume until it is answered 201 or 200; every 503 must be a proper problem with Retry-After."""
    while time.monotonic() < deadline:
        try:
            status, headers, raw = web.call(f"/api/v1/runs/{s['run_id']}/resume", resume_body(s))
        except (OSError, http.client.HTTPException):
            seen["connection error"] += 1
            time.sleep(0.2)
            continue
        seen[status] += 1
        if status in (200, 201):
            return json.loads(raw)
        if status != 503:
            problems.append((status, raw[:300]))
            return None
        body = json.loads(raw)
        if "Retry-After" not in headers or body.get("code") != "unavailable":
            problems.append((status, headers, raw[:300]))
        if not headers.get("Content-Type", "").startswith("application/problem+json"):
            problems.append(("content type", headers.get("Content-Type")))
        time.sleep(0.2)
    return None


@pytest.mark.slow
def test_a_database_crash_under_load_answers_503_and_every_acknowledged_resume_happens_once(private):
    pg, url, secret = private
    with Gunicorn(url, workers=1, threads=4, env={"DB_POOL_TIMEOUT": "2", "DB_POOL_MIN": "2"}, quiet=True) as web:
        pauses = [paused(Http(web.port, secret)) for _ in range(120)]
        answered: dict[str, dict] = {}
        seen, problems, down_503 = Counter(), [], []
        deadline = time.monotonic() + 120
        outage = threading.Event()

        def client(chunk: list[dict]) -> None:
            caller = Http(web.port, secret)
            for s in chunk:
                before = seen[503]
                body = resume_until_answered(caller, s, seen, problems, deadline)
                if body is not None:
                    answered[s["id"]] = body
                if outage.is_set() and seen[503] > before:
                    down_503.append(s["id"])
                time.sleep(0.02)

        threads = [threading.Thread(target=client, args=(pauses[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        while len(answered) < 20:
            time.sleep(0.05)
        outage.set()
        pg.stop("immediate")
        # Pages outside DRF too: a console page (the session lookup needs the database), readiness, an API list.
        probes = {
            path: probe(web.port, path, headers)
            for path, headers in [
                ("/console/", {"Cookie": "sessionid=" + "a" * 32}),
                ("/readyz", {}),
                ("/api/v1/runs", {"Authorization": f"Bearer {secret}"}),
            ]
        }
        pg.start()
        for t in threads:
            t.join()
        pid = web.process.pid
        assert web.process.poll() is None  # the same gunicorn, never restarted

    print(f"\nfault: {len(pauses)} resumes, answers {dict(seen)}, 503 while down on {len(down_503)} resumes")
    assert problems == []
    assert all(status == 503 and retry for status, retry, _ in probes.values()), probes
    assert probes["/api/v1/runs"][2].startswith("application/problem+json")
    assert len(answered) == len(pauses)
    assert seen[503] > 0 and down_503
    assert set(seen) <= {200, 201, 503, "connection error"}
    rows = evidence(url, [s["run_id"] for s in pauses])
    for s in pauses:
        admissions, starts, kinds = rows[s["run_id"]]
        assert (admissions, starts) == (1, 1)
        assert kinds == ["registered", "suspended", "admitted", "started"]
        assert answered[s["id"]]["admission"]["valid"] is True
    assert pid > 0


@pytest.mark.slow
def test_a_worker_killed_after_commit_leaves_a_receipt_the_retry_gets_back_as_a_replay(private):
    _, url, secret = private
    with Gunicorn(url, workers=1, threads=2, app="tests.races.test_faults:killing_app", quiet=True) as web:
        caller = Http(web.port, secret)
        s = paused(caller)
        with pytest.raises((OSError, http.client.HTTPException)):
            caller.call(f"/api/v1/runs/{s['run_id']}/resume", resume_body(s), {"X-Test-Kill-After-Commit": "1"})
        status, _, raw = Http(web.port, secret).call(f"/api/v1/runs/{s['run_id']}/resume", resume_body(s))
        assert web.process.poll() is None
    assert status == 200, raw
    replay = json.loads(raw)
    assert replay["fresh"] is False and "suspension" not in replay and "results" not in replay
    admissions, starts, kinds = evidence(url, [s["run_id"]])[s["run_id"]]
    assert (admissions, starts, kinds) == (1, 1, ["registered", "suspended", "admitted", "started"])
    with psycopg.connect(url) as conn:
        digest, start_digest = conn.execute(
            "SELECT a.request_digest, s.digest FROM suspensions_admission a JOIN suspensions_start s"
            " ON s.admission_id = a.id WHERE a.run_id = %s",
            [s["run_id"]],
        ).fetchone()
    assert replay["admission"]["request_digest"] == digest
    assert replay["start"]["digest"] == start_digest
