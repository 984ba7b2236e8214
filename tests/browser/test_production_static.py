"""Production as documented: collectstatic, gunicorn -c gunicorn.conf.py with DEBUG off, every asset served.

The server is a real gunicorn process on a free port, against this test's
PostgreSQL database (committed data: a transactional test), with a temporary
STATIC_ROOT that `manage.py collectstatic` fills, exactly as the README's
deploy steps do. Chromium loads the console, an approval, the admin and the
API docs and must see no failed request for the page or any /static/ file,
hashed names with far-future caching, and styles actually applied.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from tests.browser.conftest import paused
from tests.helpers import member

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BASE_DIR = Path(__file__).resolve().parents[2]
WAIT_MS = 20_000
START_SECONDS = 60
# console.css under collectstatic's hashed name.
HASHED_CSS = re.compile(r"/static/console/console\.[0-9a-f]{12}\.css$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def this_database_url() -> str:
    """DATABASE_URL of the database this test writes to (pytest-django's test_<name>)."""
    db = connection.settings_dict
    auth = quote(db["USER"], safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def production_env(static_root: Path, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "production-static-test-secret",
        "DATABASE_URL": this_database_url(),
        "DJANGO_STATIC_ROOT": str(static_root),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        # Plain HTTP on the loopback: no TLS in front, so no secure-only cookies or redirects.
        "DJANGO_SECURE_COOKIES": "0",
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "DB_POOL_MIN": "1",
        "DB_POOL_MAX": "4",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "GUNICORN_THREADS": "4",
    }


def wait_until_serving(server: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"gunicorn exited with {server.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    pytest.fail(f"gunicorn did not answer /healthz:\n{log.read_text()}")


def stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@pytest.fixture
def gunicorn(transactional_db: None, tmp_path: Path) -> Iterator[str]:
    """collectstatic into a temporary STATIC_ROOT, then gunicorn with the repository's config; its URL."""
    port = free_port()
    env = production_env(tmp_path / "staticfiles", port)
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stderr
    assert (tmp_path / "staticfiles" / "staticfiles.json").exists()
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "suspensions_project.wsgi"],
            cwd=BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the workers stop with it
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(server, url, log)
        yield url
    finally:
        # Before the database is flushed: the workers hold pooled connections to it.
        stop(server)


class Network:
    """Every request a browser context sends, the answers it gets and the requests that fail."""

    def __init__(self, context) -> None:
        self.asked: list[str] = []
        self.requests: list = []
        self.responses: list = []
        self.failures: list[str] = []
        context.on("request", self.sent)
        context.on("response", self.responded)
        context.on("requestfailed", self.failed)

    def sent(self, request) -> None:
        self.asked.append(request.url)
        self.requests.append(request)

    def responded(self, response) -> None:
        self.responses.append(response)

    def failed(self, request) -> None:
        # A stylesheet answered with an HTML 404 is blocked (nosniff): a failure, not a response.
        # Only this page's requests count: the previous page's favicon fetch, aborted by the
        # navigation away from it, can report its failure after clear().
        # Chromium also cancels a page's own favicon fetch at will (net::ERR_ABORTED, no answer at all);
        # a favicon that is missing still fails below, as an answer of 400 or more.
        cancelled_icon = "favicon" in request.url and "ERR_ABORTED" in (request.failure or "")
        if any(request is sent for sent in self.requests) and not cancelled_icon:
            self.failures.append(f"{request.url} {request.failure}")

    def clear(self) -> None:
        self.asked.clear()
        self.requests.clear()
        self.responses.clear()
        self.failures.clear()


def loads_every_asset(page, network: Network, site: str, url: str) -> list:
    """Open `url`; assert the page and every /static/ file it asked for answered below 400. Its static responses."""
    network.clear()
    response = page.goto(url)
    page.wait_for_load_state("networkidle")
    assert response is not None and response.status == 200, (url, response and response.status)
    static = f"{site}/static/"
    assert any(asked.startswith(static) for asked in network.asked), f"{url} asked for no static file"
    assert not [failure for failure in network.failures if failure.startswith(static)], network.failures
    watched = {asked for asked in network.asked if asked.startswith(static)} | {response.url}
    broken = [(r.status, r.url) for r in network.responses if r.status >= 400 and r.url in watched]
    assert not broken, broken
    return [r for r in network.responses if r.url.startswith(static)]


STYLE = ["background-color", "color", "font-family", "font-size", "margin-top"]


def computed(page, selector: str) -> dict[str, str]:
    return page.eval_on_selector(
        selector,
        "(el, names) => Object.fromEntries(names.map(n => [n, getComputedStyle(el).getPropertyValue(n)]))",
        STYLE,
    )


def browser_default(context, tag: str) -> dict[str, str]:
    """The computed style of a bare `tag` in a page without any stylesheet."""
    page = context.new_page()
    page.set_content(f"<!doctype html><html><body><{tag} id=bare>x</{tag}></body></html>")
    style = computed(page, "body" if tag == "body" else "#bare")
    page.close()
    return style


def styled(page, context, selector: str, tag: str) -> None:
    own, default = computed(page, selector), browser_default(context, tag)
    assert own != default, f"{selector} has the browser's default style {own}"


def test_collectstatic_and_gunicorn_serve_every_asset_of_the_console_admin_and_docs(chromium, gunicorn, engine):
    member("alice", {"acme": ["approver"]}, is_staff=True)
    approval = paused(engine, "refund-agent", "send_refund", '{"order": "A-1042", "amount": 900}', 3600)
    site = gunicorn
    context = chromium.new_context()
    context.set_default_timeout(WAIT_MS)
    network = Network(context)
    page = context.new_page()

    static = loads_every_asset(page, network, site, f"{site}/console/login/")
    css = [r for r in static if HASHED_CSS.search(r.url)]
    assert css, [r.url for r in static]
    assert "immutable" in css[0].headers.get("cache-control", "")
    styled(page, context, "body", "body")

    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")
    page.wait_for_url(f"{site}/console/")

    loads_every_asset(page, network, site, f"{site}/console/approvals/{approval['id']}/")
    assert "A-1042" in page.locator("pre.code").first.inner_text()
    styled(page, context, "pre.code", "pre")

    loads_every_asset(page, network, site, f"{site}/admin/")
    styled(page, context, "#header", "div")

    loads_every_asset(page, network, site, f"{site}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "suspensions" in page.locator(".swagger-ui .info .title").inner_text()
    styled(page, context, ".swagger-ui .info .title", "h2")
    context.close()
