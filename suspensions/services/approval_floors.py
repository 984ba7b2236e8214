"""Approval floors (issue 32 item 5, docs/policies.md "Floors"): operators create, change and delete them.

A floor is configuration, not run state: nothing here takes a run lock or
writes an Event. Each change is one transaction that first takes a
transaction-scoped advisory lock on the floor's top-level scope, so two
changes in one tenant never both pass the check that the floors on every
scope path still allow some on_expiry value in common; then it reads, checks
every input, and writes. A refusal leaves nothing behind. One INFO line is
logged on commit. What a floor does to a pause is suspensions/floors.py.

The API, the console and the admin call these functions.
"""

import logging
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db import connection, transaction

from .. import floors, scopes, selectors
from ..clock import db_now
from ..exceptions import Forbidden, InvalidRequest
from ..models import ApprovalFloor, Role
from ..principals import Principal
from .webhooks import operator_row, operator_scope
from .webhooks import require_operator as require_operator  # the webhooks' rule: operators only

log = logging.getLogger("suspensions.floors")

FIELDS = ("quorum", "exclude_requester", "on_expiry", "require_linked_person", "require_escalation")
DEFAULTS: dict[str, Any] = {
    "quorum": 1,
    "exclude_requester": True,
    "on_expiry": list(floors.ON_EXPIRY),
    "require_linked_person": False,
    "require_escalation": False,
}


@dataclass
class _Values:
    """A floor as it would be after the change (floors.FloorRow), for the check before writing."""

    scope: str
    quorum: int
    exclude_requester: bool
    on_expiry: list[str]
    require_linked_person: bool
    require_escalation: bool


def floor_of(principal: Principal, floor_id: UUID | str, *, lock: bool = False) -> ApprovalFloor:
    """A floor in the principal's operator scopes (404 otherwise, leaking nothing)."""
    return operator_row(principal, selectors.approval_floors(principal), floor_id, "approval floor", lock=lock)


def check_values(values: dict[str, Any]) -> dict[str, Any]:
    """The floor's fields, each of the right type and range; 400 invalid_request naming the field otherwise."""
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise InvalidRequest("unknown fields", errors={k: ["Unknown field."] for k in unknown})
    quorum = values.get("quorum", 1)
    if type(quorum) is not int or not 1 <= quorum <= 5:
        raise InvalidRequest("quorum must be an integer from 1 to 5", errors={"quorum": ["An integer from 1 to 5."]})
    for name in ("exclude_requester", "require_linked_person", "require_escalation"):
        if type(values.get(name, False)) is not bool:
            raise InvalidRequest(f"{name} must be true or false", errors={name: ["true or false."]})
    on_expiry = values.get("on_expiry", floors.ON_EXPIRY)
    words = ", ".join(floors.ON_EXPIRY)
    if not isinstance(on_expiry, list | tuple) or not on_expiry or not all(v in floors.ON_EXPIRY for v in on_expiry):
        raise InvalidRequest("on_expiry must list allowed values", errors={"on_expiry": [f"At least one of {words}."]})
    if len(set(on_expiry)) != len(on_expiry):
        raise InvalidRequest("on_expiry repeats a value", errors={"on_expiry": ["Name each value once."]})
    # Kept in ON_EXPIRY's order, whatever order it came in: a floor reads the same however it was typed.
    return {**values, "on_expiry": [v for v in floors.ON_EXPIRY if v in on_expiry]}


def _lock_tenant(scope: str) -> None:
    """Serialise floor changes within one top-level scope until the transaction ends (see the module)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"approval_floor:{scope.split('/')[0]}"])


def _check_satisfiable(changed: _Values, exclude: Any = None) -> None:
    """400 when, with `changed`, the floors on some scope path would allow no on_expiry value in common."""
    others = [
        f
        for f in [*selectors.covering_floors(changed.scope), *selectors.floors_below(changed.scope)]
        if f.pk != exclude and f.scope != changed.scope
    ]
    rows: list[Any] = [*others, changed]
    bottoms: list[Any] = [changed, *(f for f in others if scopes.covers(changed.scope, f.scope))]
    for bottom in bottoms:
        chain = [r for r in rows if scopes.covers(r.scope, bottom.scope)]
        combined = floors.combine(chain)
        if combined is not None and not combined.on_expiry:
            clash = ", ".join(r.scope for r in chain if r is not changed)
            raise InvalidRequest(
                f"on_expiry has no value in common with the floors of {clash}",
                errors={"on_expiry": [f"Leave at least one value that the floors of {clash} allow too."]},
            )


def check_floor(scope: str, values: dict[str, Any], *, exclude: Any = None) -> None:
    """400 when `scope` has another floor than `exclude`, or when `values` there would leave some path no on_expiry.

    `values` are every field, checked (check_values). Reads only; the admin's form asks it before saving.
    """
    if ApprovalFloor.objects.filter(scope=scope).exclude(pk=exclude).exists():
        raise InvalidRequest(
            f"scope {scope} already has an approval floor",
            errors={"scope": ["This scope has a floor already: change that one."]},
        )
    _check_satisfiable(_Values(scope=scope, **values), exclude)


def create_floor(*, principal: Principal, scope: str | None, **values: Any) -> ApprovalFloor:
    """A new floor on `scope` (without one: the one scope where the principal is an operator).

    Refuses a bad field (400), a scope that has a floor already (400), a
    floor whose on_expiry leaves some scope path no allowed value (400) and a
    scope where the principal is not an operator (403), before writing.
    """
    require_operator(principal)
    scope = operator_scope(principal, scope, "floor")
    if not isinstance(scope, str) or not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    checked = {**DEFAULTS, **check_values(values)}
    if not principal.can(Role.OPERATOR, scope):
        raise Forbidden(f"the 'operator' role is required in scope '{scope}'")
    with transaction.atomic():
        _lock_tenant(scope)
        check_floor(scope, checked)
        now = db_now()
        floor = ApprovalFloor(**checked, created_by=principal.name, created_at=now, updated_by=principal.name)
        floor.updated_at = now
        floor.stamp_scope(scope)
        floor.save(force_insert=True)
        _logged("created", principal, floor)
    return floor


def update_floor(*, principal: Principal, floor_id: UUID | str, **changes: Any) -> ApprovalFloor:
    """Change some of a floor's fields (its scope stays). Locks the floor row; refusals as create_floor's.

    A change that changes nothing answers the floor as it is and writes nothing.
    """
    checked = check_values(changes)
    with transaction.atomic():
        # The tenant lock comes before the row lock (create takes only the first): read the scope, lock, re-read.
        found = floor_of(principal, floor_id)
        _lock_tenant(found.scope)
        found = floor_of(principal, floor_id, lock=True)
        changed = {k: v for k, v in checked.items() if k in changes and getattr(found, k) != v}
        if not changed:
            return found
        check_floor(found.scope, {k: changed.get(k, getattr(found, k)) for k in FIELDS}, exclude=found.pk)
        for name, value in changed.items():
            setattr(found, name, value)
        found.updated_by, found.updated_at = principal.name, db_now()
        found.save(update_fields=[*changed, "updated_by", "updated_at"])
        _logged("changed", principal, found, fields=",".join(changed))
    return found


def delete_floor(*, principal: Principal, floor_id: UUID | str) -> ApprovalFloor:
    """Remove a floor and answer it as it was: pauses stored under it keep the policy they got. Locks the row."""
    with transaction.atomic():
        found = floor_of(principal, floor_id, lock=True)
        ApprovalFloor.objects.filter(pk=found.pk).delete()  # the instance keeps its id for the answer
        _logged("deleted", principal, found)
    return found


def _logged(change: str, principal: Principal, floor: ApprovalFloor, **extra: str) -> None:
    fields = {"floor_change": change, "floor_id": str(floor.id), "scope": floor.scope, "actor": principal.name, **extra}
    transaction.on_commit(lambda: log.info("approval floor %s %s", change, fields["floor_id"], extra=fields))
