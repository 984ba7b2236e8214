"""examples/engine_loop.py and examples/langgraph_tool_gate.py, run as subprocesses against the live server.

The test is the approver: it finds the example's pause in the approval list
and decides it through the client, as a person would in the console.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from suspensions.models import Run, WebhookEndpoint
from tests.processes import wait_for
from tests.push.receivers import free_port

ROOT = Path(__file__).resolve().parents[2]
API_DOC = ROOT / "docs" / "api.md"
ENGINE_LOOP = ROOT / "examples" / "engine_loop.py"
LANGGRAPH = ROOT / "examples" / "langgraph_tool_gate.py"
needs_langgraph = pytest.mark.skipif(
    importlib.util.find_spec("langgraph") is None, reason="langgraph is not installed (requirements-dev.txt has it)"
)


def start(script, base_url, token, *args):
    env = {**os.environ, "SUSPENSIONS_URL": base_url, "SUSPENSIONS_TOKEN": token}
    argv = [sys.executable, str(script), "--poll", "0.2", *args]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)


def read_until(proc, line):
    """The example's output up to and including `line` (read as it comes); fails if the example ends first."""
    seen = []
    for got in proc.stdout:
        seen.append(got)
        if got.rstrip("\n") == line:
            return "".join(seen)
    pytest.fail(f"the example ended before printing {line!r}:\n{''.join(seen)}")


def finished(proc):
    try:
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        pytest.fail(f"the example did not finish:\n{output}")
    return proc.returncode, output


def decide_when_asked(approver, agent_id, decision, reason=None):
    """Wait for the example's pause in the approval list, then decide it."""
    wait_for(lambda: approver.list_approvals(agent_id=agent_id).results, f"{agent_id}'s approval request")
    pause = approver.list_approvals(agent_id=agent_id).results[0]
    approver.decide(pause.id, pause.version, decision, reason=reason)
    return pause


def test_the_engine_loop_runs_the_call_an_approver_approved_and_completes(base_url, token, approver):
    proc = start(ENGINE_LOOP, base_url, token("acme", ["engine"]), "--scope", "acme")
    pause = decide_when_asked(approver, "support-agent", "approve", "fine")
    code, output = finished(proc)
    assert code == 0, output
    assert f"paused run {pause.run_id} for approval {pause.id}" in output
    assert 'ran send_refund({"order": 42, "amount": 900}) -> {"refunded": 900, "order": 42}' in output
    assert Run.objects.get(pk=pause.run_id).state == "completed"


def test_the_engine_loop_reports_a_denial_and_exits_2(base_url, token, approver):
    proc = start(ENGINE_LOOP, base_url, token("acme", ["engine"]), "--scope", "acme", "--amount", "5000")
    pause = decide_when_asked(approver, "support-agent", "deny", "too much")
    code, output = finished(proc)
    assert code == 2, output
    assert "not approved: denied: too much" in output and "ran send_refund" not in output
    assert Run.objects.get(pk=pause.run_id).error == "rejected: too much"


def test_the_engine_loop_approves_itself_with_an_approver_token(base_url, token):
    engine, approver = token("acme", ["engine"]), token("acme", ["approver"], "demo-approver")
    code, output = finished(start(ENGINE_LOOP, base_url, engine, "--scope", "acme", "--approve-with-token", approver))
    assert code == 0, output
    assert "approved by token:demo-approver: approved by the demo's own token" in output
    assert Run.objects.get().state == "completed"


@pytest.mark.slow
def test_the_engine_loop_wakes_on_the_webhook_of_the_decision(base_url, token, approver, worker):
    worker()
    secret = token("acme", ["engine", "operator"], "engine-operator")
    proc = start(ENGINE_LOOP, base_url, secret, "--scope", "acme", "--webhook-port", str(free_port()), "--poll", "600")
    wait_for(lambda: approver.list_approvals(agent_id="support-agent").results, "the engine's approval request")
    # Decide only once the engine waits: decided before its first look at the run, it would need no wake-up.
    before = read_until(proc, "waiting for the decision (polling every 600 s, woken by webhooks)")
    pause = approver.list_approvals(agent_id="support-agent").results[0]
    approver.decide(pause.id, pause.version, "approve")
    code, output = finished(proc)
    output = before + output
    assert code == 0, output
    assert "webhook: approval.decided" in output and "completed at revision 4" in output
    assert WebhookEndpoint.objects.get().active is False  # disabled at exit


@needs_langgraph
def test_the_langgraph_tool_node_pauses_for_approval_and_resumes_on_the_decision(base_url, token, approver):
    proc = start(LANGGRAPH, base_url, token("acme", ["engine"]), "--scope", "acme")
    pause = decide_when_asked(approver, "langgraph-agent", "approve")
    code, output = finished(proc)
    assert code == 0, output
    assert 'assistant: Done: {"refunded": 900, "order": 42}' in output
    assert f"decide it at {base_url}/console/approvals/{pause.id}/" in output  # as engine_loop.py prints it
    run = Run.objects.get(pk=pause.run_id)
    assert (run.state, run.revision) == ("completed", 4)


@needs_langgraph
def test_the_langgraph_tool_node_turns_a_denial_into_the_tools_answer(base_url, token, approver):
    proc = start(LANGGRAPH, base_url, token("acme", ["engine"]), "--scope", "acme")
    decide_when_asked(approver, "langgraph-agent", "deny", "no refunds today")
    code, output = finished(proc)
    assert code == 2, output
    assert "assistant: Done: not approved (denied): no refunds today" in output


def test_the_readme_says_the_langgraph_example_needs_the_dev_set():
    readme = (ROOT / "README.md").read_text()
    paragraph = next(p for p in readme.split("\n\n") if "examples/langgraph_tool_gate.py" in p)
    assert "make install" in paragraph
    # And the example says it too, rather than a traceback, when only `make run`'s set is installed.
    assert "This example needs langgraph: `make install`" in LANGGRAPH.read_text()


def test_the_python_client_section_of_the_api_doc_runs_as_written(base_url, token, tmp_path):
    section = API_DOC.read_text().split("## 10. Python client", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "snippet.py").write_text(code)
    secret = token("acme", ["engine", "approver"], "doc-reader")
    env = {**os.environ, "BASE": base_url, "TOKEN": secret}
    done = subprocess.run(
        [sys.executable, str(tmp_path / "snippet.py")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "True [{'call_id': 'call_1', 'content': {'rows': 1}}] 3"
    assert lines[1:4] == ["completed", "execute send_refund {'amount': 900}", "completed"]
    assert lines[4].startswith("409 version_conflict run ") and lines[4].endswith("is at revision 4, not 3")
