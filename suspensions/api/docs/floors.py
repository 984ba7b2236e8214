"""Approval floors (docs/api.md §7.9, docs/policies.md "Floors"); every route is the operator's."""

from drf_spectacular.utils import OpenApiExample

from . import samples as v
from .base import Doc, answer, ex, refusal

ONE_FLOOR: dict[int, tuple[str, ...]] = {403: ("forbidden",), 404: ("not_found",)}

OPERATIONS = {
    "create_approval_floor": Doc(
        tag="approval floors",
        role="operator",
        summary="Create an approval floor",
        description="The least an approval pause in `scope`, or any scope below it, asks for: `quorum` (1 to 5, "
        "default 1), `exclude_requester` (default true), `on_expiry` (the values a pause may use; default all "
        "three) and `require_linked_person` (default false). `scope` may be left out by an operator in exactly "
        "one scope. One floor per scope; a floor whose `on_expiry` shares no value with the floors above or "
        "below it is refused. Pauses stored before keep their policy.",
        errors={400: ("invalid_request",), 403: ("forbidden",), 410: ("deleted_since",), 413: ("request_too_large",)},
    ),
    "list_approval_floors": Doc(
        tag="approval floors",
        role="operator",
        summary="List approval floors",
        description="The floors of the caller's operator scopes, newest first.",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "get_approval_floor": Doc(
        tag="approval floors",
        role="operator",
        summary="Read an approval floor",
        description="One floor of the caller's operator scopes.",
        errors=ONE_FLOOR,
    ),
    "update_approval_floor": Doc(
        tag="approval floors",
        role="operator",
        summary="Change an approval floor",
        description="Changes the fields given and keeps the others; the scope stays. Applies to pauses stored "
        "from now on: a pause keeps the policy it was stored with.",
        errors={400: ("invalid_request",), **ONE_FLOOR, 413: ("request_too_large",)},
    ),
    "delete_approval_floor": Doc(
        tag="approval floors",
        role="operator",
        summary="Delete an approval floor",
        description="Answers the floor as it was. Pauses stored under it keep the policy they got.",
        errors=ONE_FLOOR,
    ),
}

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "create_approval_floor": [
        ex(
            "two people, never the requester",
            {"scope": "demo", "quorum": 2, "on_expiry": ["expire", "deny"], "require_linked_person": True},
        ),
        answer("created", v.floor(), 201),
    ],
    "list_approval_floors": [answer("a page", v.floor(), 200)],
    "get_approval_floor": [answer("a floor", v.floor(), 200)],
    "update_approval_floor": [
        ex("three people", {"quorum": 3}),
        answer("changed", v.floor(quorum=3, updated_at=v.LATER), 200),
    ],
    "delete_approval_floor": [answer("deleted", v.floor(), 200)],
}

REFUSALS: dict[str, list[OpenApiExample]] = {
    "create_approval_floor": [
        refusal(
            "a second floor on a scope",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                "scope demo already has an approval floor",
                errors={"scope": ["This scope has a floor already: change that one."]},
            ),
        )
    ],
}
