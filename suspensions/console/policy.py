"""An approval's policy on the console's approval page (docs/policies.md): its words, the votes, the edit fields.

Plain data for the templates, built from the approval body (approval_reads.find_approval,
the API's shape) and the vote rows; nothing here writes or decides. The decision itself
is `services.decide`, the API's own: this module only reads the approver's form into
the `calls` that function takes, and its refusals back into the form.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.http import QueryDict

from .. import scopes, strictjson, timefmt
from ..models import ApprovalVote
from .forms import MAX_ARGUMENTS
from .present import loads, pending_calls, pretty, pretty_json_text

# A field's name in the approve form: one per editable call, named after the call's id.
FIELD = "arguments:"
# Rows of an edit field: enough for a short object without scrolling, never a wall.
MIN_ROWS, MAX_ROWS = 4, 14


def words(approval: Mapping[str, Any], own: ApprovalVote | None) -> dict[str, Any]:
    """The policy as the policy card states it: quorum and votes, who may not decide, what the deadline does."""
    policy = approval.get("policy") or {}
    on_expiry = policy.get("on_expiry", "expire")
    extend = on_expiry["escalate"]["extend_seconds"] if isinstance(on_expiry, dict) else None
    quorum = int(policy.get("quorum", 1))
    votes = [{**v, "mine": own is not None and v["voter"] == own.voter} for v in approval.get("votes", [])]
    return {
        "quorum": quorum,
        "votes": votes,
        "missing": max(quorum - len(votes), 0),
        "exclude_requester": bool(policy.get("exclude_requester", False)),
        "on_expiry": "escalate" if extend is not None else on_expiry,
        "extend": timefmt.duration(extend) if extend is not None else "",
        "escalate_to": scopes.parent(approval["scope"]),
        "chain": chain_words(policy.get("escalation") or []),
    }


def chain_words(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """An escalation chain's steps as the policy card lists them: when, and whom each asks
    (docs/policies.md, "Escalation chains")."""
    rows = []
    for step in steps:
        notify = step.get("notify") or {}
        whom = [
            f"{label} {', '.join(map(str, notify.get(key) or []))}" for key, label in CHAIN_LABELS if notify.get(key)
        ]
        rows.append({"after": timefmt.duration(int(step.get("after_seconds", 0))), "whom": "; ".join(whom)})
    return rows


CHAIN_LABELS = (("scopes", "approvers of"), ("groups", "approvers in group"), ("people", "approvers"))


def own_vote(votes: Sequence[ApprovalVote], person: str) -> ApprovalVote | None:
    """This person's vote, whichever of their principals cast it (a user, or a token linked to that user)."""
    return next((v for v in votes if v.voter_key == person), None)


def vote_summary(vote: ApprovalVote | None) -> dict[str, Any] | None:
    """What the signed-in approver voted: when, with which note, and which calls they edited."""
    if vote is None:
        return None
    calls = loads(vote.calls)
    edited = (
        [str(c.get("id")) for c in calls if isinstance(c, dict) and c.get("edited")] if isinstance(calls, list) else []
    )
    return {"voter": vote.voter, "cast_at": vote.cast_at, "note": vote.note, "edited": edited}


def first_edits(votes: Sequence[ApprovalVote]) -> dict[str, str]:
    """The arguments the first vote edited, by call id, as that vote sent them.

    Later votes must approve exactly these (409 vote_mismatch), so the form offers
    them as they are, not re-indented.
    """
    calls = loads(votes[0].calls) if votes else None
    if not isinstance(calls, list):
        return {}
    return {str(c["id"]): str(c["arguments"]) for c in calls if isinstance(c, dict) and c.get("edited")}


def edit_fields(
    approval: Mapping[str, Any],
    votes: Sequence[ApprovalVote],
    posted: Mapping[str, str] | None = None,
    errors: Mapping[str, list[dict[str, str]]] | None = None,
) -> list[dict[str, Any]]:
    """A field per editable call: what the approver typed (after a refusal), else the first vote's edit, else the call.

    The call's own arguments are shown pretty-printed: the service compares JSON values,
    so the indentation is not an edit.
    """
    edits = first_edits(votes)
    fields = []
    for call in approval["calls"]:
        if not call.get("editable"):
            continue
        call_id = call["id"]
        text = (posted or {}).get(call_id, edits.get(call_id, call["arguments"]))
        schema = call.get("arguments_schema")
        fields.append(
            {
                "id": call_id,
                "name": call["name"],
                "field": FIELD + call_id,
                "text": text,
                "rows": min(max(text.count("\n") + 2, MIN_ROWS), MAX_ROWS),
                "first_vote_edit": call_id in edits,
                "errors": (errors or {}).get(call_id, []),
                "schema": pretty(schema) if schema is not None else "",
                "summary": schema_summary(schema) if schema is not None else [],
            }
        )
    return fields


def edited_calls(pending_text: str, post: QueryDict) -> tuple[list[dict[str, str]], dict[str, str], dict[str, Any]]:
    """The approve form's fields as the decide service's `calls`: (calls, the texts as typed, field errors by call id).

    Only editable calls have a field; a text that is not JSON is the field's error
    here, before the service is asked. Browsers send a textarea's line breaks as
    CRLF: they are read as the LF the page showed.
    """
    calls: list[dict[str, str]] = []
    texts: dict[str, str] = {}
    errors: dict[str, Any] = {}
    for call in pending_calls(pending_text):
        name = FIELD + str(call.get("id"))
        if not call.get("editable") or name not in post:
            continue
        call_id, text = str(call["id"]), str(post.get(name, "")).replace("\r\n", "\n")
        texts[call_id] = text
        if len(text) > MAX_ARGUMENTS:
            errors[call_id] = [{"path": "", "message": f"The arguments are over {MAX_ARGUMENTS:,} characters."}]
            continue
        try:
            strictjson.loads(text)
        except strictjson.StrictJSONError as exc:
            errors[call_id] = [{"path": "", "message": f"This is not valid JSON: {exc}."}]
            continue
        calls.append({"id": call_id, "arguments": text})
    return calls, texts, errors


def errors_by_call(errors: Any) -> dict[str, list[dict[str, str]]]:
    """ArgumentsInvalid's `errors` ({call_id, path, message} each) grouped under their call."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for e in errors if isinstance(errors, list) else []:
        if isinstance(e, dict):
            grouped.setdefault(str(e.get("call_id")), []).append(
                {"path": str(e.get("path", "")), "message": str(e.get("message", ""))}
            )
    return grouped


def final_rows(approval: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The calls as decided (an approve's final arguments), each edited one beside the arguments that were asked."""
    asked = {c["id"]: c["arguments"] for c in approval["calls"]}
    return [
        {
            "id": str(c.get("id", "")),
            "name": str(c.get("name", "")),
            "arguments": pretty_json_text(c.get("arguments", "")),
            "edited": bool(c.get("edited")),
            "asked": asked.get(c.get("id"), ""),
        }
        for c in approval.get("final_calls") or []
        if isinstance(c, dict)
    ]


def schema_summary(schema: Any) -> list[str]:
    """A call's arguments_schema in a few lines: each property's type and bounds, what is required, extra keys."""
    if not isinstance(schema, dict):
        return []
    lines = []
    properties = schema.get("properties")
    required = schema["required"] if isinstance(schema.get("required"), list) else []
    if isinstance(properties, dict):
        for key, rule in properties.items():
            need = "required" if key in required else "optional"
            lines.append(f"{key} ({need}): {describe(rule)}")
    elif "type" in schema:
        lines.append(f"Arguments: {describe(schema)}")
    if schema.get("additionalProperties") is False:
        lines.append("No other keys.")
    return lines


def describe(rule: Any) -> str:
    """One property's rule in words: "integer, at most 500", "one of "EUR", "USD"", "any value"."""
    if not isinstance(rule, dict):
        return "any value" if rule is True else "no value allowed"
    parts = []
    kind = rule.get("type")
    if kind:
        parts.append(" or ".join(map(str, kind)) if isinstance(kind, list) else str(kind))
    if isinstance(rule.get("enum"), list):
        parts.append("one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in rule["enum"]))
    if "const" in rule:
        parts.append("exactly " + json.dumps(rule["const"], ensure_ascii=False))
    bounds = (
        ("minimum", "at least"),
        ("exclusiveMinimum", "over"),
        ("maximum", "at most"),
        ("exclusiveMaximum", "under"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
        ("pattern", "matching {}"),
        ("format", "format {}"),
    )
    for key, words_ in bounds:
        if key in rule:
            parts.append(words_.format(rule[key]) if "{}" in words_ else f"{words_} {rule[key]}")
    return ", ".join(parts) or "see the schema"
