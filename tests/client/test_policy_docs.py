"""docs/policies.md runs as written: its shell blocks, in order, against the live server.

Each ```json block there ends with the status line the command before it
prints (`HTTP 422`); the run must print the same statuses in the same order,
and each answer must carry the `code` and `state` values its block shows.
"""

import re
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from tests.processes import child_env

DOC = Path(settings.BASE_DIR) / "docs" / "policies.md"
ROLES = ["engine", "bus", "approver", "auditor", "operator"]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def shown(block: str) -> tuple[str, list[str]]:
    """(status line, the "code"/"state" values) a ```json block shows, if it shows a status."""
    status = re.search(r"^HTTP \d{3}$", block, flags=re.M)
    values = re.findall(r'"(?:code|state)": "([a-z_]+)"', block)
    return (status.group(0) if status else "", values)


@pytest.mark.slow
def test_every_shell_block_of_the_policies_page_runs_and_answers_what_the_page_shows(base_url, token):
    text = DOC.read_text()
    script = "set -euo pipefail\n" + "\n".join(blocks(text, "sh"))
    env = child_env(BASE=base_url, TOKEN=token("demo", ROLES, "docs"), DJANGO_SECRET_KEY="test-only-secret")
    run = subprocess.run(
        ["bash", "-c", script], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-3000:]
    expected = [shown(b) for b in blocks(text, "json") if shown(b)[0]]
    assert len(expected) >= 8, "the page shows a status after each example"
    answers = re.split(r"^(HTTP \d{3})$", run.stdout, flags=re.M)
    got = list(zip(answers[1::2], answers[0::2], strict=False))
    assert [status for status, _ in got] == [status for status, _ in expected], run.stdout[-3000:]
    for (status, body), (_, values) in zip(got, expected, strict=True):
        for value in values:
            assert f'"{value}"' in body, (status, value, body[:1000])
