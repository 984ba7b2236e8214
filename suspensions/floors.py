"""Approval floors without the database (issue 32 item 5, docs/policies.md "Floors").

An operator sets a floor on a scope; it covers that scope and every scope
below it. A pause for approval gets the policy it asked for, raised to the
floors that cover its scope: `combine` folds every covering floor into one,
field by field, the strictest value winning, and `apply` turns the requested
`approval` policy into the Approval columns that are stored.

What can only go up is raised, not refused: the quorum, separation of duties
and "only people decide" have one stricter direction, so an engine that knows
nothing of floors keeps working and simply asks for more. `on_expiry` has no
such order (expire, deny and escalate are different outcomes, not stronger
ones): a value the floors do not allow is refused with 400
below_approval_floor naming the floors, unless the pause left it out, when
the floors' first allowed value that needs no extra setting is taken.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import policies, scopes
from .exceptions import BelowApprovalFloor, PersonRequired

# Every on_expiry value, in the order a left-out value is picked ("escalate" needs extend_seconds: never picked).
ON_EXPIRY = ("expire", "deny", "escalate")
PICKABLE = ("expire", "deny")


class FloorRow(Protocol):
    """What `combine` reads of a floor: models.ApprovalFloor, or anything with these attributes."""

    scope: str
    quorum: int
    exclude_requester: bool
    on_expiry: list[str]
    require_linked_person: bool
    require_escalation: bool


def allowed(row: FloorRow) -> tuple[str, ...]:
    """The on_expiry values a floor allows, in ON_EXPIRY's order; an empty list allows every value."""
    return tuple(v for v in ON_EXPIRY if not row.on_expiry or v in row.on_expiry)


@dataclass(frozen=True)
class Floor:
    """The covering floors folded into one: the most demanding value of each field."""

    scopes: tuple[str, ...]
    quorum: int
    exclude_requester: bool
    on_expiry: tuple[str, ...]
    require_linked_person: bool
    # The scopes of the floors that require an escalation chain (docs/policies.md, "Escalation chains").
    require_escalation: tuple[str, ...] = ()
    # Each floor's scope and allowed on_expiry values, to name the floors that refuse a value.
    allowed_by_scope: tuple[tuple[str, tuple[str, ...]], ...] = field(default=(), compare=False)


def combine(rows: Iterable[FloorRow]) -> Floor | None:
    """The floors covering one scope as one Floor (top scope first), or None when there is none."""
    found = sorted(rows, key=lambda r: (scopes.depth(r.scope), r.scope))
    if not found:
        return None
    by_scope = tuple((r.scope, allowed(r)) for r in found)
    return Floor(
        scopes=tuple(r.scope for r in found),
        quorum=max(r.quorum for r in found),
        exclude_requester=any(r.exclude_requester for r in found),
        on_expiry=tuple(v for v in ON_EXPIRY if all(v in values for _, values in by_scope)),
        require_linked_person=any(r.require_linked_person for r in found),
        require_escalation=tuple(r.scope for r in found if r.require_escalation),
        allowed_by_scope=by_scope,
    )


@dataclass(frozen=True)
class Applied:
    """The policy a pause gets: the Approval columns, the floor behind them, and the fields it raised."""

    columns: dict[str, Any]
    floor: Floor | None = None
    raised: tuple[str, ...] = ()

    def event_data(self) -> dict[str, Any]:
        """What the `suspended` event records of the floor (nothing when no floor covered the pause)."""
        if self.floor is None:
            return {}
        c = self.columns
        on_expiry: Any = c["on_expiry"]
        if on_expiry == "escalate":
            on_expiry = {"escalate": {"extend_seconds": c["extend_seconds"]}}
        policy = {
            "quorum": c["quorum"],
            "exclude_requester": c["exclude_requester"],
            "on_expiry": on_expiry,
            "require_linked_person": c["require_linked_person"],
        }
        return {"floor": {"scopes": list(self.floor.scopes), "raised": list(self.raised), "policy": policy}}


def apply(floor: Floor | None, requested: Mapping[str, Any] | None) -> Applied:
    """The Approval columns of a validated `approval` policy (None: no policy) under `floor`.

    Raises 400 below_approval_floor for an on_expiry the floors do not allow, and for a pause without an
    escalation chain under a floor that requires one (a chain cannot be raised to: whom to ask is the pause's).
    """
    columns = {**policies.parse_policy(requested), "require_linked_person": False, "floor_scopes": ""}
    if floor is None:
        return Applied(columns)
    raised = []
    if columns["quorum"] < floor.quorum:
        columns["quorum"] = floor.quorum
        raised.append("quorum")
    if floor.exclude_requester and not columns["exclude_requester"]:
        columns["exclude_requester"] = True
        raised.append("exclude_requester")
    if columns["on_expiry"] not in floor.on_expiry:
        columns.update(on_expiry=_picked(floor, requested, columns["on_expiry"]), extend_seconds=None)
        raised.append("on_expiry")
    if floor.require_linked_person:
        columns["require_linked_person"] = True
        raised.append("require_linked_person")
    if floor.require_escalation and not columns["escalation"]:
        where = ", ".join(floor.require_escalation)
        raise BelowApprovalFloor(
            f"the approval floor of {where} requires an escalation chain",
            errors={"approval": {"escalation": [f"The approval floor of {where} requires an escalation chain."]}},
            floors=list(floor.require_escalation),
        )
    columns["floor_scopes"] = ",".join(floor.scopes)
    return Applied(columns, floor, tuple(raised))


def _picked(floor: Floor, requested: Mapping[str, Any] | None, asked: str) -> str:
    """The on_expiry for a pause that left it out; a value the pause named and the floors refuse is a 400."""
    named = requested is not None and "on_expiry" in requested
    pickable = [v for v in PICKABLE if v in floor.on_expiry]
    if not named and pickable:
        return pickable[0]
    refusing = [s for s, values in floor.allowed_by_scope if asked not in values]
    words = ", ".join(floor.on_expiry) or "none (the floors allow no value in common: ask an operator)"
    raise BelowApprovalFloor(
        f"on_expiry {asked!r} is below the approval floor of {', '.join(refusing)}: allowed {words}",
        errors={"approval": {"on_expiry": [f"Allowed here: {words}."]}},
        floors=refusing,
    )


def check_person(principal: Any, record: Any) -> None:
    """403 person_required: the floor lets only a principal of a known person (a user, a linked token) decide."""
    if record.require_linked_person and principal.user_id is None:
        raise PersonRequired(
            f"{principal.name} is linked to no person; this approval's floor accepts decisions from people only"
        )
