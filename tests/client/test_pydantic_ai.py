"""examples/pydantic_ai_gate.py against the live server: PydanticAI's deferred tools paused, decided, resumed.

Each step is its own process: `ask` runs the agent until its tool needs
approval, pauses and exits; the test decides through the API as an approver
would in the console; `resume` rebuilds the agent from the service alone.
The tool's calls are counted in a ledger file the example appends to.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from suspensions.models import Run, Suspension
from tests.client.test_examples import read_until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pydantic_ai_gate.py"
CLIENT_SRC = ROOT / "clients" / "python" / "src"

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("pydantic_ai") is None, reason="pydantic-ai is not installed"),
    pytest.mark.slow,  # two interpreters that import pydantic_ai per test
]


def start(base_url, token, ledger, *args):
    """One process of the example, started: its output (stderr included) comes on `stdout`."""
    env = {**os.environ, "SUSPENSIONS_URL": base_url, "SUSPENSIONS_TOKEN": token}
    env["PYTHONPATH"] = os.pathsep.join([str(CLIENT_SRC), env.get("PYTHONPATH", "")])  # this checkout's client
    argv = [sys.executable, str(EXAMPLE), "--poll", "0.2", "--scope", "acme", "--ledger", str(ledger), *args]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)


def step(base_url, token, ledger, *args):
    """One process of the example, run to its end: (exit status, output)."""
    proc = start(base_url, token, ledger, *args)
    output, _ = proc.communicate(timeout=120)
    return proc.returncode, output


def ask(base_url, token, ledger, *args):
    code, output = step(base_url, token, ledger, *args, "ask")
    assert code == 0, output
    return Suspension.objects.get(run__agent_id="pydantic-ai-agent")


def sent(ledger):
    return [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []


@pytest.fixture
def engine_token(token):
    return token("acme", ["engine"])


def test_the_pause_holds_each_call_with_its_arguments_and_pydantic_ais_own_messages(
    base_url, engine_token, engine, tmp_path
):
    pause = ask(base_url, engine_token, tmp_path / "ledger")
    stored = engine.get_suspension(str(pause.id))  # as the resuming process reads it
    assert [(c.id, c.name, json.loads(c.arguments), c.editable) for c in stored.pending] == [
        ("call_1", "send_refund", {"order": 42, "amount": 900}, True)
    ]
    messages = stored.continuation["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == "Order 42 arrived broken, please refund it."
    assert messages[1]["pydantic_ai"]["parts"][0]["part_kind"] == "tool-call"
    assert pause.run.state == "paused" and sent(tmp_path / "ledger") == []  # nothing ran before the decision


def test_an_edited_approval_runs_the_tool_once_with_the_edited_arguments(base_url, engine_token, approver, tmp_path):
    ledger = tmp_path / "ledger"
    pause = ask(base_url, engine_token, ledger)
    approval = approver.get_approval(str(pause.id))
    edit = [{"id": "call_1", "arguments": '{"order": 42, "amount": 100}'}]
    approver.decide(approval.suspension_id, approval.version, "approve", reason="half", calls=edit)

    code, output = step(base_url, engine_token, ledger, "resume", str(pause.run_id))
    assert code == 0, output
    assert "decision: admitted" in output and 'assistant: Done: {"refunded": 100, "order": 42}' in output
    assert sent(ledger) == [{"order": 42, "amount": 100}]
    assert Run.objects.get(pk=pause.run_id).state == "completed"

    # A second resume finds nothing to run: the tool still ran once.
    code, output = step(base_url, engine_token, ledger, "resume", str(pause.run_id))
    assert code == 1 and "is not paused: nothing to resume from" in output, output
    assert len(sent(ledger)) == 1


def test_a_denial_reaches_the_model_as_the_tools_denied_answer(base_url, engine_token, approver, tmp_path):
    ledger = tmp_path / "ledger"
    pause = ask(base_url, engine_token, ledger)
    # The resuming process must have read the pause before the denial ends the run (and its continuation).
    proc = start(base_url, engine_token, ledger, "resume", str(pause.run_id))
    before = read_until(proc, f"waiting for the decision on approval {pause.id}")
    approval = approver.get_approval(str(pause.id))
    approver.decide(approval.suspension_id, approval.version, "deny", reason="no refunds today")

    output, _ = proc.communicate(timeout=120)
    output = before + output
    assert proc.returncode == 2, output
    assert "decision: denied" in output and "assistant: Done: no refunds today" in output
    assert sent(ledger) == []
    assert Run.objects.get(pk=pause.run_id).error == "rejected: no refunds today"


def test_a_resume_started_after_a_denial_says_the_continuation_is_gone(base_url, engine_token, approver, tmp_path):
    ledger = tmp_path / "ledger"
    pause = ask(base_url, engine_token, ledger)
    approval = approver.get_approval(str(pause.id))
    approver.decide(approval.suspension_id, approval.version, "deny", reason="no")

    code, output = step(base_url, engine_token, ledger, "resume", str(pause.run_id))
    assert code == 1 and "is not paused: nothing to resume from" in output, output
    assert sent(ledger) == []


def test_a_response_instead_of_the_call_reaches_the_model_and_the_tool_never_runs(
    base_url, engine_token, approver, tmp_path
):
    ledger = tmp_path / "ledger"
    pause = ask(base_url, engine_token, ledger)
    approval = approver.get_approval(str(pause.id))
    approver.decide(approval.suspension_id, approval.version, "respond", response="Refunded by hand already.")

    code, output = step(base_url, engine_token, ledger, "resume", str(pause.run_id))
    assert code == 0, output
    assert "assistant: Done: Refunded by hand already." in output
    assert sent(ledger) == []
    assert Run.objects.get(pk=pause.run_id).state == "completed"
