"""Approval policies without the database (docs/policies.md): call schemas, edits, and the decided calls.

A pending call may carry `arguments_schema` (JSON Schema, draft 2020-12) and
`editable`. The schema is checked when the pause is stored; an approver's
edit is checked against it when the decision comes. `final_calls` turns the
pending calls and an approver's edits into what the run is admitted with:
every call, its final arguments, whether it was edited, and the digest of
the arguments that were asked.
"""

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import digests, schemas, scopes
from .exceptions import ArgumentsInvalid, InvalidRequest, NotEditable, UnusableSchema

# Errors listed per refused edit: enough to fix the form, never a wall of text.
MAX_ERRORS = 20


def schema_problem(schema: Any, arguments: str) -> str | None:
    """Why `schema` cannot be a call's arguments_schema, or None.

    It must pass suspensions/schemas.py's checks (a self-contained draft
    2020-12 schema: nothing fetched, every `$ref` local and landing on a
    schema, no loop, bounded size, linear-time patterns), and validating the
    call's own arguments must fit in the budget; their outcome is not judged.
    """
    problem = schemas.problem(schema)
    if problem is None:
        try:
            schemas.errors(schema, json.loads(arguments))
        except schemas.SchemaUnusable as exc:
            problem = str(exc)
    return problem


def _path(error: Any) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)


def argument_errors(call_id: str, schema: Any, arguments: str) -> list[dict[str, str]]:
    """Each way `arguments` (a string holding JSON) breaks `schema`: its JSON path and a message.

    A schema that cannot be applied (stored before the checks, or too costly
    on these arguments) is 400 UnusableSchema naming the call, never a 500.
    """
    problem = schemas.problem(schema)
    try:
        if problem is None:
            found = sorted(schemas.errors(schema, json.loads(arguments)), key=lambda e: list(e.path))
            return [{"path": _path(e), "message": e.message} for e in found[:MAX_ERRORS]]
    except schemas.SchemaUnusable as exc:
        problem = str(exc)
    raise UnusableSchema(f"call {call_id}: its arguments schema cannot be applied: {problem}", call_id=call_id)


def arguments_digest(arguments: str) -> str:
    """SHA-256 of a call's arguments exactly as asked (the string's UTF-8 bytes), hex."""
    return hashlib.sha256(arguments.encode("utf-8")).hexdigest()


def _same(a: str, b: str) -> bool:
    """Equal as JSON values (key order and spacing do not make an edit)."""
    return digests.canonical(json.loads(a)) == digests.canonical(json.loads(b))


def final_calls(
    pending: Sequence[Mapping[str, Any]], edits: Iterable[Mapping[str, Any]] | None
) -> list[dict[str, Any]]:
    """The calls an approval admits: every pending call with its final arguments.

    `edits` is the decision's `calls`: `[{id, arguments}]`, arguments a string
    holding JSON. An edit naming an unknown or repeated call is 400; changing a
    call that is not editable is 403 not_editable (sending its arguments
    unchanged is allowed); edited arguments that break the call's schema are
    422 arguments_invalid, listing the call id and JSON path of each error.
    """
    by_id = {c["id"]: c for c in pending}
    edited = _real_edits(by_id, edits or ())
    errors = []
    # Only an edit is checked: the arguments as asked may be approved as they are (docs/policies.md).
    for call_id, arguments in edited.items():
        schema = by_id[call_id].get("arguments_schema")
        if schema is not None:
            errors += [{"call_id": call_id, **e} for e in argument_errors(call_id, schema, arguments)]
    if errors:
        raise ArgumentsInvalid(f"{len(errors)} error(s) in the edited arguments", errors=errors[:MAX_ERRORS])
    # An unchanged call keeps the text as asked, byte for byte: a form sends it back
    # pretty-printed, and two votes must agree whatever spacing each voter sent.
    return [
        {
            "id": call["id"],
            "name": call["name"],
            "arguments": edited.get(call["id"], call["arguments"]),
            "edited": call["id"] in edited,
            "original_digest": arguments_digest(call["arguments"]),
        }
        for call in pending
    ]


def _real_edits(by_id: Mapping[str, Mapping[str, Any]], edits: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """The edits that change a call's arguments, by call id (the same value sent back keeps the text as asked).

    400 for an edit naming an unknown or repeated call; 403 not_editable for a change to a call that is not editable.
    """
    seen: set[str] = set()
    edited: dict[str, str] = {}
    for index, edit in enumerate(edits):
        call_id = edit["id"]
        if call_id not in by_id:
            raise InvalidRequest(
                f"calls[{index}] names no pending call", errors={"calls": {str(index): {"id": ["Unknown call id."]}}}
            )
        if call_id in seen:
            raise InvalidRequest(
                f"call {call_id} is edited twice", errors={"calls": {str(index): {"id": ["Repeated call id."]}}}
            )
        seen.add(call_id)
        call = by_id[call_id]
        if _same(edit["arguments"], call["arguments"]):
            continue
        if not call.get("editable", False):
            raise NotEditable(f"call {call_id} ({call['name']}) is not editable", call_id=call_id)
        edited[call_id] = edit["arguments"]
    return edited


def calls_value(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What a vote approves, as values: each call's id and parsed arguments (spacing and key order do not count)."""
    return [{"id": c["id"], "arguments": json.loads(c["arguments"])} for c in calls]


def parse_policy(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """The Approval columns of a validated `approval` policy; no policy behaves as a plain approval
    (docs/api.md, "3. Who may do what")."""
    if raw is None:
        return {
            "quorum": 1,
            "exclude_requester": False,
            "on_expiry": "expire",
            "extend_seconds": None,
            "escalation": [],
        }
    on_expiry = raw.get("on_expiry", "expire")
    extend = None
    if isinstance(on_expiry, dict):
        extend = on_expiry["escalate"]["extend_seconds"]
        on_expiry = "escalate"
    return {
        "quorum": raw.get("quorum", 1),
        "exclude_requester": raw.get("exclude_requester", True),
        "on_expiry": on_expiry,
        "extend_seconds": extend,
        "escalation": escalation_steps(raw.get("escalation") or []),
    }


# An escalation chain (docs/policies.md, "Escalation chains"): at most this many steps.
MAX_ESCALATION_STEPS = 10
NOTIFY_KEYS = ("scopes", "groups", "people")


def escalation_steps(raw: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A validated chain as stored and shown: each step's `after_seconds` and its `notify` with all three lists."""
    return [
        {"after_seconds": step["after_seconds"], "notify": {k: list(step["notify"].get(k, [])) for k in NOTIFY_KEYS}}
        for step in raw
    ]


def escalation_problems(steps: Sequence[Mapping[str, Any]], scope: str, ttl: int) -> dict[str, Any]:
    """What the pause's scope and deadline refuse in a chain, as `errors` under `approval.escalation` (empty: none).

    Each step must come before the deadline (`ttl` 0: none, every step does), and each scope it notifies must be
    the pause's own or one above it: a chain never tells another tenant, or a team below, about this approval.
    """
    found: dict[str, Any] = {}
    for index, step in enumerate(steps):
        problems: dict[str, list[str]] = {}
        if ttl and step["after_seconds"] >= ttl:
            problems["after_seconds"] = [f"Must come before the deadline: less than ttl_seconds ({ttl})."]
        outside = [s for s in step["notify"].get("scopes", []) if not scopes.covers(s, scope)]
        if outside:
            problems["notify"] = [f"Scopes must be {scope} or above it, not {', '.join(outside)}."]
        if problems:
            found[str(index)] = problems
    return found
