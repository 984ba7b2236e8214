"""The OpenAPI documentation of every operation, kept out of the views (docs/api.md in short).

Each view names its operation id, its request shape and its 2xx shapes:

    @extend_schema(**docs.operation("suspend_run", request=requests.Suspend, ok={201: PausedOut}))

`operation()` adds the rest from the tables of this package: summary,
description, tag, request and answer examples, and one problem+json answer
per error status the operation can give, naming its codes. The tables are
per door (runs.py, waits.py, claims.py, flows.py, floors.py, webhooks.py); each holds
OPERATIONS (the words and the error codes), EXAMPLES and REFUSALS (problem
examples). tests/api/test_openapi.py posts every request example.
"""

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse

from ... import exceptions
from ...wire.answers import Problem
from . import audit, claims, delegations, floors, flows, identity, notification_routes, runs, waits, webhooks
from . import samples as v
from .base import ALWAYS, MEANING, SESSION_ONLY, TAG_NAMES, TAGS, Doc, refusal

__all__ = ["EXAMPLES", "OPERATIONS", "PROBLEM_JSON", "TAG_NAMES", "TAGS", "Doc", "meaning", "operation"]

PROBLEM_JSON = "application/problem+json"
_DOORS = (runs, waits, claims, flows, floors, delegations, webhooks, notification_routes, audit, identity)
OPERATIONS: dict[str, Doc] = {k: doc for door in _DOORS for k, doc in door.OPERATIONS.items()}
EXAMPLES: dict[str, list[OpenApiExample]] = {k: x for door in _DOORS for k, x in door.EXAMPLES.items()}
REFUSALS: dict[str, list[OpenApiExample]] = {k: x for door in _DOORS for k, x in door.REFUSALS.items()}
TITLES = {cls.code: cls.title for cls in exceptions.ALL_ERRORS}

SUCCESS = {200: "OK.", 201: "Created.", 202: "Accepted."}
# A call that creates answers 201; the identical call again answers 200 with the original body.
REPLAYED = {
    200: "The identical request again: the original answer, `fresh: false`; nothing was done twice.",
    201: "Done by this call: `fresh: true`.",
}


# Answers whose status alone does not say what happened.
ANSWERS = {
    ("decide_approval", 202): "A vote short of the quorum: recorded; the run still waits at the same revision.",
    ("test_webhook", 202): "Queued: the message, pending until a worker delivers it.",
    ("redeliver_webhook_message", 202): "Queued again: the message, pending and due now.",
    ("start_admission", 201): "Execution granted, once: the pause and the admitted input.",
}


def meaning(code: str) -> str:
    """What a code means, as the caller reads it next to the code."""
    return MEANING.get(code) or TITLES.get(code, "").lower() or code


# The refusals every operation (or every one with a body) can give, as the service answers them
# (tests/api/test_openapi.py compares each with a real answer). Without an example of its own,
# Swagger UI would invent one from the Problem schema, every optional field filled in.
STANDARD = {
    401: ("no token", exceptions.Unauthenticated, "Authentication credentials were not provided."),
    404: ("not in your scopes", exceptions.NotFound, exceptions.NotFound.title),
    413: ("a body too large", exceptions.RequestTooLarge, "the body is 9437184 bytes; at most 8454144"),
    503: ("database down", exceptions.Unavailable, exceptions.Unavailable.title),
}


def _standard(doc: Doc, status: int) -> list[OpenApiExample]:
    """The example of a status whose refusals this operation's table shows none of."""
    error: type[exceptions.ServiceError]
    if status == 403:
        role = doc.role.split(" ")[0]
        detail = (
            "You do not have permission to perform this action."  # DRF's words: the console session check
            if role == "any"
            else f"the '{role}' role is required in scope 'demo'"
        )
        name, error = "role missing", exceptions.Forbidden
    elif status in STANDARD:
        name, error, detail = STANDARD[status]
    else:
        return []
    return [refusal(name, v.problem(status, error.code, error.title, detail))]


def _problem(doc: Doc, status: int, examples: list[OpenApiExample]) -> OpenApiResponse:
    codes = {**ALWAYS, **doc.errors}.get(status, ())
    lines = [f"- `{code}`: {meaning(code)}" for code in codes]
    if status == 403 and "forbidden" not in codes:
        lines.append(f"- {SESSION_ONLY}")
    return OpenApiResponse(Problem, description="\n".join(lines), examples=examples)


def _success(operation_id: str, ok: dict[Any, Any]) -> dict[Any, Any]:
    """The 2xx answers, each with a description unless the view gave its own OpenApiResponse."""
    words = {**SUCCESS, **(REPLAYED if 200 in ok and 201 in ok else {})}
    return {
        status: shape
        if isinstance(shape, OpenApiResponse)
        else OpenApiResponse(shape, description=ANSWERS.get((operation_id, status), words[status]))
        for status, shape in ok.items()
    }


def operation(operation_id: str, *, ok: dict[Any, Any], request: Any = None) -> dict[str, Any]:
    """The keyword arguments of `extend_schema` for one operation."""
    doc = OPERATIONS[operation_id]
    refusals = REFUSALS.get(operation_id, [])
    statuses = sorted({503, *doc.errors} if doc.public else {*ALWAYS, *doc.errors, 403})
    shown = {status: [r for r in refusals if r.status_codes == [str(status)]] for status in statuses}
    problems = {
        (status, PROBLEM_JSON): _problem(doc, status, shown[status] or _standard(doc, status)) for status in statuses
    }
    return {
        "operation_id": operation_id,
        "summary": doc.summary,
        "description": f"{doc.description}\n\nRole: {doc.role}.",
        "tags": [doc.tag],
        "request": request,
        "responses": {**_success(operation_id, ok), **problems},
        "examples": EXAMPLES.get(operation_id, []),
    }
