"""No log line holds a capability: an email's one-click link or a callback URL (docs/deploy.md, "Logs"; issue 50, 1).

The servers are real: gunicorn with gunicorn.conf.py and the service's logging configuration,
nginx in front with deploy/nginx/suspensions.conf (tests/front_door.py), and a Celery worker that
sends the approver's email to a file. The approver opens the email's link with sign-in required,
signs in, lands on the link's page and approves; an engine resumes a pause through its callback
URL; both routes also get a tampered token and a wrong method (Django's 404 warnings). Then the
web, worker and nginx logs are read: the tokens are in none of them, the redacted paths are.
"""

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.db import connection

from suspensions.models import Approval
from tests.front_door import Answer, Nginx, database_url, request, start_gunicorn, start_nginx
from tests.helpers import approval_pause, call, client, continuation, member, post
from tests.processes import Processes, celery_worker, child_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PATIENCE = 10


@pytest.fixture
def deployment(tmp_path) -> Iterator[tuple[Nginx, Path]]:
    """A Celery worker mailing to tmp_path/mail, gunicorn with sign-in required for links, nginx in front."""
    procs = Processes()
    worker_log = tmp_path / "worker.log"
    mail = {"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend", "EMAIL_FILE_PATH": str(tmp_path)}
    env = child_env(**mail)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.pop("LOG_DIR", None)
    procs.start(celery_worker(tmp_path, 0, "capability-logs"), env=env, log_path=worker_log)
    try:
        wait_for(lambda: " ready." in worker_log.read_text(), f"the worker to be ready (log: {worker_log})")
        # The sign-in page renders {% static %}: DEBUG off wants collectstatic's manifest, as in production.
        extra = {"EMAIL_LINKS_REQUIRE_LOGIN": "1", "LOG_DIR": "", "DJANGO_STATIC_ROOT": str(tmp_path / "static")}
        collect = [sys.executable, "manage.py", "collectstatic", "--noinput"]
        subprocess.run(collect, env={**env, **extra}, check=True, capture_output=True, timeout=300)
        db_url = database_url(connection.settings_dict)
        gunicorn = start_gunicorn(tmp_path, db_url, workers=1, threads=2, extra_env=extra)
        try:
            nginx = start_nginx(tmp_path, gunicorn.port)
            try:
                yield nginx, tmp_path
            finally:
                nginx.stop()
        finally:
            gunicorn.stop()
    finally:
        procs.stop_all()


class Browser:
    """Requests through nginx with the cookies the service set, as a browser sends them."""

    def __init__(self, port: int) -> None:
        self.port, self.cookies = port, SimpleCookie()

    def send(self, method: str, path: str, form: dict[str, str] | None = None) -> Answer:
        headers = {"Cookie": "; ".join(f"{k}={m.value}" for k, m in self.cookies.items())}
        body = None
        if form is not None:
            body = urlencode(form).encode()
            headers |= {"Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://127.0.0.1:{self.port}"}
        answer = request(self.port, method, path, headers=headers, body=body, timeout=PATIENCE)
        for cookie in answer.headers.get_all("Set-Cookie") or []:
            self.cookies.load(cookie)
        return answer

    def csrf_of(self, answer: Answer) -> str:
        return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', answer.body.decode()).group(1)


def emailed_link(directory: Path) -> str:
    """The path of the Approve link in the email the worker wrote."""
    found: list[str] = []

    def sent() -> bool:
        for path in directory.glob("*.log"):
            match = re.search(r"^Approve: https?://[^/]+(/console/act/\S+)$", path.read_text(), re.M)
            if match:
                found.append(match.group(1))
        return bool(found)

    wait_for(sent, "the worker to send the approver's email", seconds=60, step=0.2)
    return found[0]


def sign_in_through_the_link(browser: Browser, link: str) -> Answer:
    """Open the link signed out, sign in, follow the redirects back: the link's confirmation page."""
    to_login = browser.send("GET", link)
    assert to_login.status == 302 and to_login.headers["Location"] == "/console/login/?next=/console/act/"
    login = browser.send("GET", to_login.headers["Location"])
    form = {"username": "alice", "password": "pw", "csrfmiddlewaretoken": browser.csrf_of(login)}
    signed_in = browser.send("POST", to_login.headers["Location"], form)
    assert signed_in.status == 302 and signed_in.headers["Location"] == "/console/act/", signed_in.body[:300]
    back = browser.send("GET", "/console/act/")
    assert back.status == 302 and back.headers["Location"] == link
    return browser.send("GET", link)


def test_no_web_worker_or_nginx_log_holds_an_email_link_or_a_callback_token(deployment, token):
    nginx, directory = deployment
    member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com")
    approval = approval_pause("acme")
    link = emailed_link(directory)
    link_token = link.removeprefix("/console/act/")

    browser = Browser(nginx.port)
    page = sign_in_through_the_link(browser, link)
    assert page.status == 200 and "Approve this request?" in page.body.decode()
    done = browser.send("POST", link, {"csrfmiddlewaretoken": browser.csrf_of(page)})
    assert done.status == 200, done.body[:300]
    assert Approval.objects.get(pk=approval.pk).status == "approved"
    assert browser.send("GET", link + "x").status == 404  # Django's "Not Found: <path>" warning

    engine = client(token("acme", ["engine"]))
    run = post(engine, "/api/v1/runs", {"agent_id": "a1"}).json()
    body = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    paused = post(engine, f"/api/v1/runs/{run['id']}/suspend", {**body, "callback": True}).json()
    callback = "/api/v1/callbacks/" + paused["callback_url"].rsplit("/callbacks/", 1)[1]
    callback_token = callback.removeprefix("/api/v1/callbacks/")
    version = {"run_id": run["id"], "suspension_id": paused["id"], "run_revision": paused["run_revision"]}
    resume = {"version": version, "results": [{"call_id": "c1", "content": "done"}]}
    json_body = {"Content-Type": "application/json"}
    sent = request(nginx.port, "POST", callback, headers=json_body, body=json.dumps(resume).encode(), timeout=PATIENCE)
    assert sent.status == 201, sent.body[:300]
    assert request(nginx.port, "GET", callback, timeout=PATIENCE).status == 404
    assert request(nginx.port, "POST", callback + "x", timeout=PATIENCE).status == 404

    # The last request's lines are written once its answer is: wait for nginx's, then stop nothing early.
    wait_for(lambda: nginx.access_log.read_text().count("/api/v1/callbacks/<redacted>") >= 3, "nginx's lines")
    logs = {
        "web": directory / "gunicorn.log",
        "worker": directory / "worker.log",
        "nginx access": nginx.access_log,
        "nginx error": directory / "nginx.log",
    }
    texts = {name: path.read_text() for name, path in logs.items()}
    for name, text in texts.items():
        for secret in (link_token, link_token[:20], callback_token, callback_token[:20]):
            assert secret not in text, f"the {name} log holds a capability:\n{text}"
    for name in ("web", "nginx access"):
        assert "/console/act/<redacted>" in texts[name] and "/api/v1/callbacks/<redacted>" in texts[name]
    assert "Not Found: /console/act/<redacted>" in texts["web"]
