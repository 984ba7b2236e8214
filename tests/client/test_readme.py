"""The README's first pause runs as written (issue 51, point 5): its four steps, against the live server.

The reader sets BASE and TOKEN from what `make run` printed; the test has both
(`base_url`, `token`), so it runs the block without the two lines that set
them. Each curl call reports its status on stderr, so the answers captured
into variables are checked too.
"""

import re
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from tests.client.test_api_docs import CURL
from tests.client.test_policy_docs import ROLES, blocks
from tests.processes import child_env

ROOT = Path(settings.BASE_DIR)
SET_BY_THE_READER = ("BASE=", "TOKEN=")


def first_pause(text: str) -> str:
    section = text.split("## A first pause in four steps", 1)[1]
    steps = blocks(section, "sh")[0]
    own = "\n".join(line for line in steps.splitlines() if not line.startswith(SET_BY_THE_READER))
    return "\n".join(["set -euo pipefail", CURL, own])


def test_the_readme_is_at_most_250_lines_and_sets_the_address_once():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    steps = blocks(text.split("## A first pause in four steps", 1)[1], "sh")[0]
    assert steps.count("127.0.0.1:") == 2  # BASE's line, and its comment naming another PORT
    assert "$BASE/api/v1/runs" in steps


@pytest.mark.slow
def test_the_readme_s_four_steps_answer_what_they_say(base_url, token):
    script = first_pause((ROOT / "README.md").read_text())
    env = child_env(BASE=base_url, TOKEN=token("demo", ROLES, "readme"), DJANGO_SECRET_KEY="test-only-secret")
    run = subprocess.run(
        ["bash", "-c", script], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-3000:]
    calls = re.findall(r"^CALL (\S+) (\S+) (\d{3})$", run.stderr, flags=re.M)
    said = [(method, url.rsplit("/", 1)[1], status) for method, url, status in calls]
    assert said == [
        ("POST", "runs", "201"),  # 1. register and pause, in one call
        ("POST", "resume", "201"),  # 2. resume once: fresh
        ("POST", "resume", "200"),  # 3. the same resume again: fresh: false
        ("POST", "complete", "200"),  # 4. finish
    ], run.stderr[-3000:]
    assert '"fresh": false' in run.stdout or '"fresh":false' in run.stdout
