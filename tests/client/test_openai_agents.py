"""examples/openai_agents_gate.py against the live server: an Agents SDK run pauses in one process, resumes in another.

`ask` runs the agent until its `needs_approval` tool interrupts it, pauses
the service's run and exits. The test decides through the API as an
approver would. `resume` is a fresh process that rebuilds the agent's run
from the service alone. The tool appends to a ledger file, so the test
counts the refunds actually sent across both processes.
"""

import base64
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from suspensions_client.errors import ArgumentsInvalid

from suspensions.models import Run

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("agents") is None,
        reason="openai-agents is not installed (requirements-dev.txt has it)",
    ),
]
# Each live test starts the example's processes, and each of them imports the SDK: seconds apiece.
slow = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "openai_agents_gate.py"
PAUSED = re.compile(r"^paused run (\S+) for approval (\S+)$", re.MULTILINE)


def launch(base_url, secret, ledger, *args):
    """The example in its own process, its output read as it comes."""
    env = {**os.environ, "SUSPENSIONS_URL": base_url, "SUSPENSIONS_TOKEN": secret}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "clients" / "python" / "src"), env.get("PYTHONPATH", "")])
    argv = [sys.executable, str(EXAMPLE), *args, "--scope", "acme", "--poll", "0.2", "--ledger", str(ledger)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)


def example(base_url, secret, ledger, *args):
    """Run the example to its end in its own process: (exit status, output)."""
    return finished(launch(base_url, secret, ledger, *args))


def waiting(proc, pause_id):
    """The process once it has read the pause and waits for the decision; fails if it ends first."""
    for line in proc.stdout:
        if line.startswith(f"waiting for the decision on {pause_id}"):
            return proc
    pytest.fail(f"the example ended before waiting:\n{finished(proc)[1]}")


def finished(proc):
    try:
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        pytest.fail(f"the example did not finish:\n{output}")
    return proc.returncode, output


@pytest.fixture
def agent_run(base_url, token, tmp_path):
    """ask() -> (run id, pause id) once `ask`'s process paused and exited; resume() / resuming(): the second process.

    resume() runs `resume` to its end: (status, output); resuming() starts it
    and returns the process once it waits for the decision (finish it with
    `finished`).
    """
    secret, ledger = token("acme", ["engine"]), tmp_path / "refunds.jsonl"
    ids = {}

    def ask(*args):
        code, output = example(base_url, secret, ledger, "ask", *args)
        assert code == 0, output
        ids["run"], ids["pause"] = PAUSED.search(output).groups()
        return ids["run"], ids["pause"]

    def resume():
        return example(base_url, secret, ledger, "resume", ids["run"], ids["pause"])

    def resuming():
        return waiting(launch(base_url, secret, ledger, "resume", ids["run"], ids["pause"]), ids["pause"])

    def refunds():
        return [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []

    return ask, resume, resuming, refunds


def decide(approver, pause_id, decision, **fields):
    approval = approver.get_approval(pause_id)
    return approver.decide(pause_id, approval.version, decision, **fields)


@slow
def test_the_paused_agent_keeps_its_run_state_and_the_tool_call_in_the_service(agent_run, engine):
    ask, _, _, refunds = agent_run
    run_id, pause_id = ask()
    pause = engine.get_suspension(pause_id)
    assert [(c.id, c.name, c.arguments, c.editable) for c in pause.pending] == [
        ("call_refund_1", "send_refund", '{"order":42,"amount":900}', True)
    ]
    # The edit is bounded by the tool's own parameter schema, as the SDK derived it from the signature.
    schema = pause.pending[0].arguments_schema
    assert schema["required"] == ["order", "amount"] and schema["additionalProperties"] is False
    state = json.loads(base64.b64decode(pause.continuation["prepared"]))
    assert state["current_step"]["type"] == "next_step_interruption"  # the SDK's own RunState, as to_string() wrote it
    assert pause.continuation["provenance"] == {"framework": "openai-agents", "prepared": "RunState.to_string()"}
    assert Run.objects.get(pk=run_id).state == "paused" and refunds() == []


@slow
def test_an_approved_refund_runs_once_in_a_new_process_and_the_run_completes(agent_run, approver):
    ask, resume, _, refunds = agent_run
    run_id, pause_id = ask()
    decide(approver, pause_id, "approve", reason="fine")
    code, output = resume()
    assert code == 0, output
    assert 'assistant: Done: {"refunded": 900, "order": 42}' in output
    assert refunds() == [{"order": 42, "amount": 900}]
    assert Run.objects.get(pk=run_id).state == "completed"
    # A second resume of the same pause finds it already started: the tool does not run again.
    code, output = resume()
    assert code == 2 and f"run {run_id} ended done: nothing to resume (it was not admitted)" in output, output
    assert refunds() == [{"order": 42, "amount": 900}]


@slow
def test_the_tool_runs_with_the_arguments_the_approver_edited(agent_run, approver):
    ask, resume, _, refunds = agent_run
    _, pause_id = ask()
    decide(approver, pause_id, "approve", calls=[{"id": "call_refund_1", "arguments": '{"order": 42, "amount": 450}'}])
    code, output = resume()
    assert code == 0, output
    assert refunds() == [{"order": 42, "amount": 450}]
    assert 'assistant: Done: {"refunded": 450, "order": 42}' in output


@slow
def test_an_edit_the_tools_signature_refuses_is_refused_and_nothing_runs(agent_run, approver):
    ask, resume, _, refunds = agent_run
    run_id, pause_id = ask()
    edit = [{"id": "call_refund_1", "arguments": '{"order": 42, "amount": "all of it"}'}]
    with pytest.raises(ArgumentsInvalid) as refused:
        decide(approver, pause_id, "approve", calls=edit)
    assert refused.value.problem["errors"][0]["path"] == "$.amount"
    assert Run.objects.get(pk=run_id).state == "paused"  # still waiting: the approver may decide again
    decide(approver, pause_id, "approve")
    code, output = resume()
    assert code == 0, output
    assert refunds() == [{"order": 42, "amount": 900}]


@slow
def test_a_denial_reaches_the_model_as_the_sdks_rejection_and_nothing_runs(agent_run, approver):
    ask, _, resuming, refunds = agent_run
    run_id, pause_id = ask()
    proc = resuming()
    decide(approver, pause_id, "deny", reason="too much")
    code, output = finished(proc)
    assert code == 2, output
    # The canned model echoes the tool's output: the SDK handed it the rejection message in place of a result.
    assert "assistant: Done: The approver denied this tool call: too much" in output
    assert refunds() == []
    assert Run.objects.get(pk=run_id).error == "rejected: too much"


@slow
def test_a_denial_before_any_process_read_the_pause_leaves_nothing_to_resume(agent_run, approver):
    ask, resume, _, refunds = agent_run
    run_id, pause_id = ask()
    decide(approver, pause_id, "deny", reason="too much")
    code, output = resume()
    assert code == 2, output
    assert f"run {run_id} ended denied: nothing to resume (the denial deleted the pause" in output
    assert refunds() == []


@slow
def test_a_response_in_words_reaches_the_model_and_the_run_completes_without_the_tool(agent_run, approver):
    ask, _, resuming, refunds = agent_run
    run_id, pause_id = ask()
    proc = resuming()
    decide(approver, pause_id, "respond", response="Call the customer first.")
    code, output = finished(proc)
    assert code == 2, output
    assert "assistant: Done: The approver answered instead of running this tool: Call the customer first." in output
    assert refunds() == []
    assert Run.objects.get(pk=run_id).state == "completed"


@slow
def test_the_example_runs_both_halves_in_one_process_with_an_approver_token(base_url, token, tmp_path):
    engine, approver = token("acme", ["engine"]), token("acme", ["approver"], "demo-approver")
    ledger = tmp_path / "refunds.jsonl"
    code, output = example(base_url, engine, ledger, "both", "--approve-with-token", approver)
    assert code == 0, output
    assert ledger.read_text().splitlines() == ['{"order": 42, "amount": 900}']
    assert Run.objects.get().state == "completed"


def test_the_readmes_say_which_extra_the_example_needs_and_the_client_declares_it():
    extras = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text())["project"]
    assert extras["optional-dependencies"]["openai-agents"] == ["openai-agents>=0.24"]
    readme = (ROOT / "README.md").read_text()
    paragraph = next(p for p in readme.split("\n\n") if "examples/openai_agents_gate.py" in p)
    assert "pip install './clients/python[openai-agents]'" in paragraph
    assert "pip install './clients/python[openai-agents]'" in (ROOT / "clients" / "python" / "README.md").read_text()
    # And the example says it too, rather than a traceback, where the SDK is not installed.
    assert "This example needs openai-agents: `pip install './clients/python[openai-agents]'`" in EXAMPLE.read_text()
