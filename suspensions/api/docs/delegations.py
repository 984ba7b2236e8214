"""Delegations (docs/api.md, "Delegation"; docs/identity.md, "Delegation"): a person away, and who decides for them."""

from drf_spectacular.utils import OpenApiExample

from . import samples as v
from .base import Doc, answer, ex

ONE: dict[int, tuple[str, ...]] = {404: ("not_found",)}

OPERATIONS = {
    "create_delegation": Doc(
        tag="delegations",
        role="operator (for anyone in the scope) or approver (for yourself)",
        summary="Create a delegation",
        description="`to` decides for `from` in `scope` (and every scope under it) from `starts_at` (default "
        "now) until `ends_at`, at most 366 days. Left out, `from` is yourself, and you must hold `approver` in "
        "the scope; naming another person needs `operator` there. While it holds, the delegate is emailed what "
        "would ask the delegator, and may decide with `acting_for`. Both people must be active staff users.",
        errors={400: ("invalid_request",), 403: ("forbidden",), 413: ("request_too_large",)},
    ),
    "list_delegations": Doc(
        tag="delegations",
        role="operator (their scopes') or the people it names",
        summary="List delegations",
        description="The delegations you gave or hold, and those of your operator scopes, newest first.",
        errors={400: ("invalid_request",)},
    ),
    "get_delegation": Doc(
        tag="delegations",
        role="operator (their scopes') or the people it names",
        summary="Read a delegation",
        description="One delegation you gave or hold, or one of your operator scopes.",
        errors=ONE,
    ),
    "end_delegation": Doc(
        tag="delegations",
        role="operator (of its scope), its delegator or its delegate",
        summary="End a delegation now",
        description="From now on the delegate may no longer act for the delegator. Ending one already ended, or "
        "past its end, answers it as it is.",
        errors=ONE,
    ),
}

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "create_delegation": [
        ex(
            "away for a week",
            {
                "from": "alice",
                "to": "bob",
                "scope": "demo",
                "starts_at": "2098-01-02T08:00:00Z",
                "ends_at": "2098-01-09T18:00:00Z",
                "reason": "On leave",
            },
        ),
        answer("created", v.delegation(), 201),
    ],
    "list_delegations": [answer("a page", v.delegation(), 200)],
    "get_delegation": [answer("a delegation", v.delegation(), 200)],
    "end_delegation": [answer("ended", v.delegation(active=False, ended_at=v.LATER, ended_by="user:alice"), 200)],
}

REFUSALS: dict[str, list[OpenApiExample]] = {}
