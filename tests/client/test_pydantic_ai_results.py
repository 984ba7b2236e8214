"""integrations.pydantic_ai's translations, without a server: decisions to deferred results, requests to calls."""

import json
import tomllib
from pathlib import Path

import pytest

pydantic_ai = pytest.importorskip("pydantic_ai")

from pydantic_ai import DeferredToolRequests, ToolApproved, ToolDenied  # noqa: E402
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, UserPromptPart  # noqa: E402
from suspensions_client.integrations import pydantic_ai as gate  # noqa: E402
from suspensions_client.models import PendingCall  # noqa: E402


def call(arguments='{"amount": 900}', edited=False):
    return {"id": "c1", "name": "refund", "arguments": arguments, "edited": edited, "original_digest": "x"}


def test_an_edited_call_is_approved_with_the_edited_arguments_and_an_unedited_one_as_the_model_wrote_it():
    results = gate.results_of({"decision": "approve", "calls": [call('{"amount": 100}', True)]}, [])
    assert results.approvals == {"c1": ToolApproved(override_args={"amount": 100})}
    results = gate.results_of({"decision": "approve", "calls": [call()]}, [])
    assert results.approvals == {"c1": ToolApproved(override_args=None)}


def test_a_response_denies_every_pending_call_with_the_approvers_words():
    pending = [PendingCall(id="c1", name="refund", arguments="{}"), PendingCall(id="c2", name="refund", arguments="{}")]
    results = gate.results_of({"decision": "respond", "response": "done by hand"}, pending)
    assert results.approvals == {"c1": ToolDenied("done by hand"), "c2": ToolDenied("done by hand")}


def test_external_calls_are_refused_and_approvals_become_pending_calls_with_json_arguments():
    part = ToolCallPart("refund", {"amount": 900}, "c1")
    with pytest.raises(ValueError, match="not external calls"):
        gate.pending_calls(DeferredToolRequests(calls=[part]))
    with pytest.raises(ValueError, match="no approval request"):
        gate.pending_calls(DeferredToolRequests())
    [pending] = gate.pending_calls(DeferredToolRequests(approvals=[part]), editable=True)
    assert (pending["id"], pending["name"], json.loads(pending["arguments"]), pending["editable"]) == (
        "c1",
        "refund",
        {"amount": 900},
        True,
    )


def test_the_continuation_round_trips_pydantic_ais_messages():
    messages = [ModelRequest(parts=[UserPromptPart("refund 42")]), ModelResponse(parts=[ToolCallPart("refund", {})])]
    continuation = gate.to_continuation(messages, session_id="s")
    assert [(m["role"], m["content"]) for m in continuation["messages"]] == [("user", "refund 42"), ("assistant", None)]
    assert gate.from_continuation(continuation) == messages
    with pytest.raises(gate.NotAPydanticAIPause):
        gate.from_continuation({"messages": [{"role": "user", "content": "hi"}]})


def test_the_readme_names_the_extra_the_example_needs_and_the_client_declares_it():
    root = Path(__file__).resolve().parents[2]
    paragraph = next(p for p in (root / "README.md").read_text().split("\n\n") if "examples/pydantic_ai_gate.py" in p)
    assert "pip install ./clients/python[pydantic-ai]" in paragraph
    project = tomllib.loads((root / "clients" / "python" / "pyproject.toml").read_text())["project"]
    assert [r.split(">=")[0] for r in project["optional-dependencies"]["pydantic-ai"]] == ["pydantic-ai-slim"]
