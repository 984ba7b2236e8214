"""suspensions_client.integrations.langgraph across a process restart (issue 37, clients/python/README.md).

Each test runs examples/langgraph_tool_gate.py twice: `--pause-only` runs the
graph until its tool node interrupts, pauses the run and exits; `--resume`
is a new process that has only the ids, waits for the decision and resumes
the graph from the checkpoint the pause holds. The test is the approver,
through the API. The refund tool appends a line to a ledger file per call,
so the test counts how often it ran and with which arguments.
"""

import base64
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from suspensions.models import Run
from tests.client.test_examples import LANGGRAPH, ROOT, finished, read_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("langgraph") is None, reason="langgraph is not installed"),
]


def example(base_url, secret, ledger, *args):
    env = {**os.environ, "SUSPENSIONS_URL": base_url, "SUSPENSIONS_TOKEN": secret, "REFUND_LEDGER": str(ledger)}
    argv = [sys.executable, str(LANGGRAPH), "--scope", "acme", "--poll", "0.2", *args]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)


def paused_and_exited(base_url, secret, ledger, *args):
    """Run the graph's first half in its own process; it pauses the run and exits. Returns the pause's ids."""
    code, output = finished(example(base_url, secret, ledger, "--pause-only", *args))
    assert code == 0, output
    line = next(line for line in output.splitlines() if line.startswith("tool node paused run "))
    run_id, suspension_id = line.removeprefix("tool node paused run ").split(" for approval ")
    return run_id, suspension_id


def resumer(base_url, secret, ledger, run_id, suspension_id, *args):
    """A new process that resumes the run once decided; returned once it waits for the decision."""
    proc = example(base_url, secret, ledger, "--resume", run_id, suspension_id, *args)
    before = read_until(proc, f"waiting for the decision on {suspension_id}")
    return proc, before


def refunds(ledger):
    return [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []


def test_the_pause_holds_the_tool_call_and_the_graphs_checkpoint(base_url, token, approver, tmp_path):
    ledger = tmp_path / "ledger"
    run_id, suspension_id = paused_and_exited(base_url, token("acme", ["engine"]), ledger)
    pause = approver.get_suspension(suspension_id)
    assert [(c.id, c.name, c.arguments) for c in pause.pending] == [
        ("call_1", "send_refund", '{"order": 42, "amount": 900}')
    ]
    continuation = pause.continuation
    assert [m["role"] for m in continuation["messages"]] == ["user", "assistant"]
    assert continuation["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert continuation["provenance"]["langgraph"]["serializer"] == "msgpack"
    assert len(base64.b64decode(continuation["prepared"])) > 0
    assert Run.objects.get(pk=run_id).state == "paused" and refunds(ledger) == []


def test_a_new_process_runs_the_approved_call_exactly_once(base_url, token, approver, tmp_path):
    ledger, engine = tmp_path / "ledger", token("acme", ["engine"])
    run_id, suspension_id = paused_and_exited(base_url, engine, ledger)
    proc, before = resumer(base_url, engine, ledger, run_id, suspension_id)
    approver.decide(suspension_id, approver.get_suspension(suspension_id).version, "approve")
    code, output = finished(proc)
    assert code == 0, before + output
    assert 'assistant: Done: {"refunded": 900, "order": 42}' in output
    assert refunds(ledger) == [{"order": 42, "amount": 900}]
    assert (Run.objects.get(pk=run_id).state, Run.objects.get(pk=run_id).revision) == ("completed", 4)
    # A second resume of the same pause finds it already started: the refund does not run again.
    code, output = finished(example(base_url, engine, ledger, "--resume", run_id, suspension_id))
    assert code == 1 and "CheckpointGone" in output, output
    assert refunds(ledger) == [{"order": 42, "amount": 900}]


def test_two_processes_resuming_the_same_pause_run_the_call_once(base_url, token, approver, tmp_path):
    ledger, engine = tmp_path / "ledger", token("acme", ["engine"])
    run_id, suspension_id = paused_and_exited(base_url, engine, ledger)
    first, _ = resumer(base_url, engine, ledger, run_id, suspension_id)
    second, _ = resumer(base_url, engine, ledger, run_id, suspension_id)
    approver.decide(suspension_id, approver.get_suspension(suspension_id).version, "approve")
    (code_1, out_1), (code_2, out_2) = finished(first), finished(second)
    assert sorted([code_1, code_2]) == [0, 1], out_1 + out_2
    assert "CheckpointGone" in (out_2 if code_1 == 0 else out_1)
    assert refunds(ledger) == [{"order": 42, "amount": 900}]


def test_the_tool_runs_with_the_arguments_the_approver_edited(base_url, token, approver, tmp_path):
    ledger, engine = tmp_path / "ledger", token("acme", ["engine"])
    run_id, suspension_id = paused_and_exited(base_url, engine, ledger, "--editable")
    proc, _ = resumer(base_url, engine, ledger, run_id, suspension_id, "--editable")
    edited = [{"id": "call_1", "arguments": '{"order": 42, "amount": 500}'}]
    approver.decide(suspension_id, approver.get_suspension(suspension_id).version, "approve", calls=edited)
    code, output = finished(proc)
    assert code == 0, output
    assert 'assistant: Done: {"refunded": 500, "order": 42}' in output
    assert refunds(ledger) == [{"order": 42, "amount": 500}]


def test_a_denial_reaches_the_model_as_the_tools_error_and_nothing_runs(base_url, token, approver, tmp_path):
    ledger, engine = tmp_path / "ledger", token("acme", ["engine"])
    run_id, suspension_id = paused_and_exited(base_url, engine, ledger)
    proc, _ = resumer(base_url, engine, ledger, run_id, suspension_id)
    approver.decide(suspension_id, approver.get_suspension(suspension_id).version, "deny", reason="too much")
    code, output = finished(proc)
    assert code == 2, output
    assert "assistant: Done: not approved (denied): too much" in output
    assert refunds(ledger) == []
    assert Run.objects.get(pk=run_id).error == "rejected: too much"


def test_a_response_is_the_tools_answer_and_nothing_runs(base_url, token, approver, tmp_path):
    ledger, engine = tmp_path / "ledger", token("acme", ["engine"])
    run_id, suspension_id = paused_and_exited(base_url, engine, ledger)
    proc, _ = resumer(base_url, engine, ledger, run_id, suspension_id)
    version = approver.get_suspension(suspension_id).version
    approver.decide(suspension_id, version, "respond", response="offer store credit instead")
    code, output = finished(proc)
    assert code == 0, output
    assert "assistant: Done: offer store credit instead" in output
    assert refunds(ledger) == [] and Run.objects.get(pk=run_id).state == "completed"


def test_a_denial_is_an_error_tool_message_for_each_call_as_toolnode_gives_a_failed_tool():
    from langchain_core.messages import HumanMessage, ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    spec = importlib.util.spec_from_file_location("langgraph_tool_gate", LANGGRAPH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    graph, thread = module.build().compile(checkpointer=InMemorySaver()), {"configurable": {"thread_id": "t"}}
    asked = graph.invoke({"messages": [HumanMessage("refund please")]}, thread)
    assert [i.value["calls"][0]["id"] for i in asked["__interrupt__"]] == ["call_1"]
    denial = {"decision": "deny", "status": "denied", "reason": "too much"}
    messages = graph.invoke(Command(resume=denial), thread)["messages"]
    answer = next(m for m in messages if isinstance(m, ToolMessage))
    assert (answer.tool_call_id, answer.name, answer.status) == ("call_1", "send_refund", "error")
    assert answer.content == "not approved (denied): too much"
    assert messages[-1].content == "Done: not approved (denied): too much"


def test_the_example_in_one_process_approves_itself_with_an_approver_token(base_url, token, tmp_path):
    ledger, approver_secret = tmp_path / "ledger", token("acme", ["approver"], "demo-approver")
    proc = example(base_url, token("acme", ["engine"]), ledger, "--approve-with-token", approver_secret)
    code, output = finished(proc)
    assert code == 0, output
    assert refunds(ledger) == [{"order": 42, "amount": 900}]
    assert Run.objects.get().state == "completed"
