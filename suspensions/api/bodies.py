"""Flat checks of the hot request bodies: the pause, the one-shot resume, the decision, the registration.

DRF's nested serializers (serializers.Suspend, Resume, Decide, RegisterRun)
stay the one statement of these shapes: the OpenAPI schema is generated from
them, and they write every error body. A check here is only a fast way to
say yes: it walks the parsed body once with plain functions and returns the
same validated data the serializer would, or None whenever anything is not
plainly right, and the view then runs the serializer, which accepts the body
or refuses it with its usual `errors`. So a check must never accept what its
serializer refuses (tests/api/test_bodies.py holds them to that); refusing
more than it, and leaving the verdict to the serializer, is always safe.

Strings come from the strict JSON reader (suspensions.strictjson), which has
already refused U+0000 and unpaired surrogates anywhere in the body.
"""

import base64
import binascii
import uuid
from collections.abc import Callable
from typing import Any

from .. import display, policies, strictjson, tags
from ..models import Reason
from ..strictjson import MAX_SAFE_INTEGER
from . import serializers

MAX_TTL = serializers.MAX_TTL
REASONS = frozenset(Reason.values)
DECISIONS = frozenset({"approve", "deny", "respond"})
PENDING_KEYS = frozenset({"id", "name", "arguments", "reply_with", "arguments_schema", "editable"})
SUSPEND_KEYS = frozenset({"revision", "reason", "pending", "continuation", "ttl_seconds", "approval", "tags"})
CONTINUATION_KEYS = frozenset(
    {
        "messages",
        "system_prompt",
        "step_index",
        "tokens_used",
        "new_messages_from",
        "session_id",
        "config",
        "tool_results",
        "schema_version",
        "prepared",
        "provenance",
        "usage",
    }
)
CONTINUATION_REQUIRED = ("messages", "system_prompt", "step_index", "tokens_used", "new_messages_from", "session_id")
CONFIG_STRINGS = frozenset({"model", "reasoning_loop", "persona_ref"})
CONFIG_INTS = frozenset({"max_steps", "max_tokens"})
CONFIG_BOOLS = frozenset({"tools_restricted", "all_tools_restricted"})
CONFIG_OBJECTS = frozenset({"budget", "publication"})
POLICY_KEYS = frozenset({"quorum", "exclude_requester", "on_expiry"})
VERSION_KEYS = frozenset({"run_id", "suspension_id", "run_revision"})
RESULT_KEYS = frozenset({"call_id", "content", "error"})
DECIDE_KEYS = frozenset({"version", "decision", "reason", "response", "calls"})


class Unsure(Exception):
    """Not plainly valid: the serializer decides."""


def _ok(condition: bool) -> None:
    if not condition:
        raise Unsure


def _int(value: Any, low: int = -MAX_SAFE_INTEGER, high: int = MAX_SAFE_INTEGER) -> int:
    _ok(type(value) is int and low <= value <= high)
    return value  # type: ignore[no-any-return]


def _text(value: Any, *, blank: bool = False, max_length: int | None = None, trimmed: bool = True) -> str:
    """A string field. `trimmed`: DRF would strip it, so only a string without surrounding whitespace is plain."""
    _ok(type(value) is str)
    _ok(blank or value != "")
    if trimmed:
        _ok(value == value.strip())
    _ok(max_length is None or len(value) <= max_length)
    return value  # type: ignore[no-any-return]


def _shown(value: Any, *, blank: bool = False, max_length: int | None = None, trimmed: bool = True) -> str:
    """A name or id a person is shown (fields.ShownStr): a string field without control characters."""
    text = _text(value, blank=blank, max_length=max_length, trimmed=trimmed)
    _ok(not display.has_control(text))
    return text


def _json_text(value: Any, *, max_length: int | None = None) -> str:
    _text(value, max_length=max_length, trimmed=False)
    try:
        strictjson.loads(value)
    except strictjson.StrictJSONError:
        raise Unsure from None
    return value  # type: ignore[no-any-return]


def _object(value: Any, keys: frozenset[str]) -> dict[str, Any]:
    _ok(type(value) is dict and keys.issuperset(value))
    return value  # type: ignore[no-any-return]


def _uuid(value: Any) -> uuid.UUID:
    _ok(type(value) is str)
    try:
        return uuid.UUID(value)
    except ValueError:
        raise Unsure from None


def _version(value: Any) -> dict[str, Any]:
    v = _object(value, VERSION_KEYS)
    _ok(len(v) == len(VERSION_KEYS))
    return {
        "run_id": _uuid(v["run_id"]),
        "suspension_id": _uuid(v["suspension_id"]),
        "run_revision": _int(v["run_revision"], 1),
    }


def _message(m: Any) -> None:
    _ok(type(m) is dict and "content" in m)
    content = m["content"]
    _ok(content is None or type(content) in (str, list))
    _ok("tool_calls" not in m or type(m["tool_calls"]) is list)
    _ok("tool_call_id" not in m or type(m["tool_call_id"]) is str)
    _ok("role" in m and type(m["role"]) is str and m["role"].strip() != "")


def _config(value: Any) -> None:
    c = _object(
        value, CONFIG_STRINGS | CONFIG_INTS | CONFIG_BOOLS | CONFIG_OBJECTS | {"temperature", "tools", "context"}
    )
    for key, item in c.items():
        if key in CONFIG_STRINGS:
            _ok(type(item) is str)
        elif key in CONFIG_INTS:
            _int(item, 0)
        elif key in CONFIG_BOOLS:
            _ok(type(item) is bool)
        elif key in CONFIG_OBJECTS:
            _ok(type(item) is dict)
        elif key == "context":
            _ok(item is None or type(item) is dict)
        elif key == "tools":
            _ok(type(item) is list)
            for tool in item:
                _ok(type(tool) is str and tool.strip() != "")
        else:  # temperature: a finite number (the strict reader refuses the rest), or null
            _ok(item is None or type(item) is float or (type(item) is int and abs(item) <= MAX_SAFE_INTEGER))


def _continuation(value: Any) -> None:
    c = _object(value, CONTINUATION_KEYS)
    _ok(all(key in c for key in CONTINUATION_REQUIRED) and "config" in c)
    messages = c["messages"]
    _ok(type(messages) is list)
    for m in messages:
        _message(m)
    _text(c["system_prompt"], blank=True, trimmed=False)
    _shown(c["session_id"], blank=True, trimmed=False)
    _int(c["step_index"], 0)
    _int(c["tokens_used"], 0)
    _ok(_int(c["new_messages_from"], 0) <= len(messages))
    _config(c["config"])
    if "tool_results" in c:
        _ok(type(c["tool_results"]) is list and all(item is not None for item in c["tool_results"]))
    if "schema_version" in c:
        _int(c["schema_version"], 0)
    if "prepared" in c:
        prepared = _text(c["prepared"], blank=True, trimmed=False)
        try:
            base64.b64decode(prepared, validate=True)
        except (binascii.Error, ValueError):
            raise Unsure from None
    for key in ("provenance", "usage"):
        _ok(key not in c or type(c[key]) is dict)


def _pending_call(value: Any) -> dict[str, Any]:
    call = _object(value, PENDING_KEYS)
    _ok("id" in call and "name" in call and "arguments" in call)
    _shown(call["id"], max_length=200)
    _ok("," not in _shown(call["name"], max_length=200))
    arguments = _json_text(call["arguments"])
    if "reply_with" in call:
        _shown(call["reply_with"], max_length=200)
    if "editable" in call:
        _ok(type(call["editable"]) is bool)
    if "arguments_schema" in call:
        _ok(type(call["arguments_schema"]) is dict)
        _ok(policies.schema_problem(call["arguments_schema"], arguments) is None)
    return call


def _on_expiry(value: Any) -> None:
    if value in ("expire", "deny") and type(value) is str:
        return
    _ok(type(value) is dict and set(value) == {"escalate"} and type(value["escalate"]) is dict)
    _ok(set(value["escalate"]) == {"extend_seconds"})
    _int(value["escalate"]["extend_seconds"], 1, MAX_TTL)


def _policy(value: Any) -> dict[str, Any]:
    policy = _object(value, POLICY_KEYS)
    if "quorum" in policy:
        _int(policy["quorum"], 1, 5)
    if "exclude_requester" in policy:
        _ok(type(policy["exclude_requester"]) is bool)
    if "on_expiry" in policy:
        _on_expiry(policy["on_expiry"])
    return policy


def suspend(data: Any) -> dict[str, Any]:
    body = _object(data, SUSPEND_KEYS)
    _ok(all(key in body for key in ("revision", "reason", "pending", "continuation")))
    reason = body["reason"]
    _ok(type(reason) is str and reason in REASONS)
    pending = body["pending"]
    _ok(type(pending) is list and len(pending) >= 1)
    calls = [_pending_call(c) for c in pending]
    _ok(len({c["id"] for c in calls}) == len(calls))
    _continuation(body["continuation"])
    out: dict[str, Any] = {"revision": _int(body["revision"], 1), "reason": reason}
    if "ttl_seconds" in body:
        out["ttl_seconds"] = _int(body["ttl_seconds"], 0, MAX_TTL)
    if "tags" in body:
        out["tags"] = _tags(body["tags"])
    if "approval" in body:
        policy = _policy(body["approval"])
        _ok(reason == Reason.APPROVAL)
        _ok(policy.get("on_expiry", "expire") == "expire" or out.get("ttl_seconds") != 0)
    if reason != Reason.APPROVAL:
        _ok(not any("arguments_schema" in c or "editable" in c for c in calls))
    if reason == Reason.AGENT_REPLY:
        _ok(len(calls) == 1 and "reply_with" in calls[0])
    else:
        _ok(not any("reply_with" in c for c in calls))
    return out


def resume(data: Any) -> dict[str, Any]:
    body = _object(data, frozenset({"version", "results"}))
    _ok(len(body) == 2)
    results = body["results"]
    _ok(type(results) is list and len(results) >= 1)
    for result in results:
        r = _object(result, RESULT_KEYS)
        _ok("call_id" in r and ("content" in r) != ("error" in r))
        _shown(r["call_id"], max_length=200)
        if "error" in r:
            _text(r["error"], trimmed=False)
    return {"version": _version(body["version"]), "results": results}


def decide(data: Any) -> dict[str, Any]:
    body = _object(data, DECIDE_KEYS)
    _ok("version" in body and "decision" in body)
    decision = body["decision"]
    _ok(type(decision) is str and decision in DECISIONS)
    out: dict[str, Any] = {"version": _version(body["version"]), "decision": decision}
    if "reason" in body:
        out["reason"] = _text(body["reason"], blank=True, max_length=10000)
    if "response" in body:
        out["response"] = _text(body["response"], max_length=100_000, trimmed=False)
    if "calls" in body:
        calls = body["calls"]
        _ok(type(calls) is list and len(calls) <= 1000)
        for edited in calls:
            e = _object(edited, frozenset({"id", "arguments"}))
            _ok(len(e) == 2)
            _shown(e["id"], max_length=200)
            _json_text(e["arguments"])
        out["calls"] = calls
    _ok(decision != "deny" or out.get("reason", "").strip() != "")
    _ok(decision != "respond" or out.get("response", "").strip() != "")
    _ok(decision == "respond" or "response" not in out)
    _ok(decision == "approve" or "calls" not in out)
    return out


def register(data: Any) -> dict[str, Any]:
    body = _object(data, frozenset({"agent_id", "scope", "session_id", "tags"}))
    _ok("agent_id" in body)
    out: dict[str, Any] = {"agent_id": _shown(body["agent_id"], max_length=200), "session_id": ""}
    if "scope" in body:
        out["scope"] = _text(body["scope"], max_length=192)
    if "session_id" in body:
        out["session_id"] = _shown(body["session_id"], blank=True, max_length=200)
    if "tags" in body:
        out["tags"] = _tags(body["tags"])
    return out


def _tags(value: Any) -> list[str]:
    _ok(tags.valid(value))
    return value  # type: ignore[no-any-return]


def plainly(check: Callable[[Any], dict[str, Any]], data: Any) -> dict[str, Any] | None:
    """`check(data)`: the validated data of a plainly valid body, or None (then the serializer decides)."""
    try:
        return check(data)
    except Unsure:
        return None


# The serializer each check stands in for: views.validated tries the check first.
CHECKS: dict[type[Any], Callable[[Any], dict[str, Any]]] = {
    serializers.Suspend: suspend,
    serializers.Resume: resume,
    serializers.Decide: decide,
    serializers.RegisterRun: register,
}
