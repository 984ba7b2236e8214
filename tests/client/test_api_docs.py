"""docs/api.md runs as written: every shell block of §7, in order, against the live server.

§7.0 starts a server and prints a token; the test has both already (`BASE`,
`TOKEN`), so it runs §7.0's second block without the two lines that set them.
Every curl call also reports its status on stderr (`-w '%{stderr}...'`), so
answers captured into variables are checked too: the run must end cleanly
(`set -euo pipefail`: an undefined variable is an error), no call may reach a
route that does not exist or a 5xx, and the answers the page shows must be
the server's.
"""

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.client.test_policy_docs import ROLES, blocks
from tests.processes import child_env

DOC = Path(settings.BASE_DIR) / "docs" / "api.md"
# Each curl call's method, address and status, on stderr; stdout stays what a reader sees.
CURL = """curl() { command curl -w '%{stderr}CALL %{method} %{url_effective} %{http_code}\\n' "$@"; }"""
SET_BY_THE_TEST = ("export TOKEN=", "export BASE=")
# The refusals the page shows on purpose, in its order: (method, the address's last part, status).
# Any other 4xx means an example acts on the wrong run, pause or id.
REFUSALS = [
    ("POST", "resume", 409),  # §7.2: a different request for a claimed pause
    ("POST", "complete", 409),  # §7.6: the old worker, fenced by the closure
    ("POST", "resume", 403),  # §7.7: an approval wait without its decision token
    ("POST", "redeliver", 409),  # §7.8: a message still pending, without a worker
    ("GET", "runs", 401),  # §7.12, one by one
    ("GET", "not-a-uuid", 404),
    ("POST", "runs", 400),
    ("POST", "runs", 400),
    ("POST", "runs", 400),
    ("GET", "runs?page_size=500", 400),
    ("GET", "runs?cursor=abc!", 400),
]


def script(text: str) -> str:
    setup, examples = blocks(text, "sh")[:2], blocks(text, "sh")[2:]
    assert "supervise.py --postgres" in setup[0], "§7.0 starts the server first"
    own = "\n".join(line for line in setup[1].splitlines() if not line.startswith(SET_BY_THE_TEST))
    return "\n".join(["set -euo pipefail", CURL, own, *examples])


def answers(stdout: str) -> list[Any]:
    """The JSON bodies curl printed, one after the other (curl adds no newline between them)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := stdout.find("{", at)) != -1:
        try:
            value, at = decoder.raw_decode(stdout, start)
        except json.JSONDecodeError:
            at = start + 1
            continue
        found.append(value)
    return found


@pytest.mark.slow
def test_every_shell_block_of_the_api_page_runs_and_answers_what_the_page_shows(base_url, token):
    text = DOC.read_text()
    env = child_env(BASE=base_url, TOKEN=token("demo", ROLES, "docs"), DJANGO_SECRET_KEY="test-only-secret")
    run = subprocess.run(
        ["bash", "-c", script(text)], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    calls = re.findall(r"^CALL (\S+) (\S+) (\d{3})$", run.stderr, flags=re.M)
    assert len(calls) >= 40, run.stderr[-3000:]
    refused = [(method, url.rsplit("/", 1)[1], int(status)) for method, url, status in calls if status[0] != "2"]
    assert refused == REFUSALS, run.stderr[-3000:]
    printed = answers(run.stdout)
    unrouted = [a["detail"] for a in printed if "no API resource" in str(a.get("detail", ""))]
    assert unrouted == ["no API resource at /api/v1/runs/not-a-uuid"]  # §7.12's malformed id, on purpose

    # §7.4: the start of an approved pause. Its admission is the receipt read back (`fresh: false`);
    # the start itself is the fresh grant.
    start = next(a for a in printed if "input" in a and "start" in a)
    assert (start["fresh"], start["admission"]["fresh"]) == (True, False)
    shown = next(b for b in blocks(text, "json") if '"input": "{\\"approver\\"' in b)
    assert '"fresh": false}' in shown and '"fresh": true,' in shown
