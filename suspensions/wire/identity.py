"""The identity routes' bodies (docs/identity.md, "How roles map"): role mappings and the record of role changes,
each declared once."""

from typing import Annotated, Literal, Self
from uuid import UUID

from pydantic import Field

from ..models import RoleChange, RoleMapping
from .answers import Answer, Moment, doc
from .base import MISSING, Body, OneOf, Shown

MAPPABLE = ("approver", "auditor", "operator")  # services.role_mappings.MAPPABLE: a person's roles


class CreateRoleMapping(Body):
    """Members of `group` get `role` in `scope`; `scope` may be left out by an operator in exactly one scope."""

    group: Annotated[Shown, Field(max_length=255)] = Field(
        description="The group's name as the provider sends it in the groups claim (or SCIM's displayName)."
    )
    scope: Annotated[str, Field(min_length=1, max_length=192)] | MISSING = Field(
        MISSING, description="May be left out by an operator in exactly one scope."
    )
    role: Annotated[str, OneOf(MAPPABLE)] = Field(description="A person's role: approver, auditor or operator.")


class RoleMappingOut(Answer):
    """A provider group that gives its members a role in a scope and the scopes under it."""

    id: UUID
    group: str
    scope: str
    role: Literal["approver", "auditor", "operator"]
    created_by: str
    created_at: Moment

    @classmethod
    def of(cls, row: RoleMapping) -> Self:
        return cls(
            id=row.id,
            group=row.group,
            scope=row.scope,
            role=row.role,  # type: ignore[arg-type]
            created_by=row.created_by,
            created_at=row.created_at,
        )


class RoleChangeOut(Answer):
    """One provider-given role added to or removed from a person, and what caused it."""

    id: UUID
    user_id: int = doc("The person's user id; kept after the user is deleted.")
    username: str
    scope: str
    role: str
    change: Literal["added", "removed"]
    by: str = doc("Who made the change: the identity provider at a sign-in, or the SCIM client.")
    cause: str = doc("Which sign-in or provisioning call caused it.")
    at: Moment

    @classmethod
    def of(cls, row: RoleChange) -> Self:
        return cls(
            id=row.id,
            user_id=row.user_id,
            username=row.username,
            scope=row.scope,
            role=row.role,
            change=row.change,  # type: ignore[arg-type]
            by=row.by,
            cause=row.cause,
            at=row.at,
        )
