"""Role mappings and role changes (docs/identity.md, "How roles map"): the operators' mappings, the auditors' record."""

from typing import Any

from drf_spectacular.utils import OpenApiExample

from . import samples as v
from .base import Doc, answer, ex, refusal

MAPPING_ID = "01a22e4f-2c4d-7b1e-9a3f-5e6d7c8b9a41"
CHANGE_ID = "01a22e4f-2c4d-7b1e-9a3f-5e6d7c8b9a42"
ONE: dict[int, tuple[str, ...]] = {403: ("forbidden",), 404: ("not_found",)}
MAPS = "The next sign-in or provisioning call of each member applies it."

OPERATIONS = {
    "create_role_mapping": Doc(
        tag="role mappings",
        role="operator",
        summary="Map a provider group to a role",
        description="Members of `group` (as the provider names it in the groups claim or SCIM) get `role` "
        "(approver, auditor or operator) in `scope` and the scopes under it. `scope` may be left out by an "
        f"operator in exactly one scope. One mapping per group, scope and role. {MAPS}",
        errors={400: ("invalid_request",), 403: ("forbidden",), 410: ("deleted_since",), 413: ("request_too_large",)},
    ),
    "list_role_mappings": Doc(
        tag="role mappings",
        role="operator",
        summary="List role mappings",
        description="The mappings of the caller's operator scopes, newest first.",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "get_role_mapping": Doc(
        tag="role mappings",
        role="operator",
        summary="Read a role mapping",
        description="One mapping of the caller's operator scopes.",
        errors=ONE,
    ),
    "delete_role_mapping": Doc(
        tag="role mappings",
        role="operator",
        summary="Delete a role mapping",
        description=f"Answers the mapping as it was. {MAPS}",
        errors=ONE,
    ),
    "list_role_changes": Doc(
        tag="role mappings",
        role="auditor",
        summary="List role changes",
        description="Every provider-given role added to or removed from a person in the caller's auditor or "
        "operator scopes, newest first: who, which role where, when, by whom and which sign-in or SCIM call "
        "caused it. Roles granted by hand are not in it.",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
}


def mapping(**fields: Any) -> dict[str, Any]:
    return {
        "id": MAPPING_ID,
        "group": "payments-approvers",
        "scope": "demo",
        "role": "approver",
        "created_by": v.OPERATOR,
        "created_at": v.AT,
        **fields,
    }


CHANGE = {
    "id": CHANGE_ID,
    "user_id": 7,
    "username": "alice",
    "scope": "demo",
    "role": "approver",
    "change": "added",
    "by": "identity provider",
    "cause": "oidc sign-in https://id.example.com 00u1a2b3c",
    "at": v.AT,
}

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "create_role_mapping": [
        ex("approvers of demo", {"group": "payments-approvers", "scope": "demo", "role": "approver"}),
        answer("created", mapping(), 201),
    ],
    "list_role_mappings": [answer("a page", mapping(), 200)],
    "get_role_mapping": [answer("a mapping", mapping(), 200)],
    "delete_role_mapping": [answer("deleted", mapping(), 200)],
    "list_role_changes": [answer("a page", CHANGE, 200)],
}

REFUSALS: dict[str, list[OpenApiExample]] = {
    "create_role_mapping": [
        refusal(
            "a mapping that exists",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                "this mapping exists already",
                errors={"group": ["This group has this role in this scope already."]},
            ),
        )
    ],
}
