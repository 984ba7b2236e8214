"""Typed results of the operators' and auditors' identity and retention routes: role mappings, role changes and
legal holds (docs/api.md §7.14, "Legal holds", and §7.15)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .models import JSON, at, optional_str, raw_field, when


@dataclass(frozen=True, kw_only=True)
class RoleMapping:
    """A provider group that gives its members `role` in `scope` and the scopes under it (docs/identity.md)."""

    id: str
    group: str
    scope: str
    role: str
    created_by: str
    created_at: datetime
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> RoleMapping:
        return cls(
            id=data["id"],
            group=data["group"],
            scope=data["scope"],
            role=data["role"],
            created_by=data["created_by"],
            created_at=at(data["created_at"]),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class RoleChange:
    """One provider-given role `added` to or `removed` from a person, by whom (`by`) and why (`cause`)."""

    id: str
    user_id: int
    username: str
    scope: str
    role: str
    change: str
    by: str
    cause: str
    at: datetime
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> RoleChange:
        return cls(
            id=data["id"],
            user_id=int(data["user_id"]),
            username=data["username"],
            scope=data["scope"],
            role=data["role"],
            change=data["change"],
            by=data["by"],
            cause=data["cause"],
            at=at(data["at"]),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class LegalHold:
    """A hold that keeps events past the retention: on `scope` and below it (`run` None), or on `run` (of `scope`).

    `active` is False once released (`released_by`, `released_at`); a released hold stays as its record.
    """

    id: str
    scope: str
    run: str | None
    reason: str
    created_by: str
    created_at: datetime
    active: bool
    released_by: str | None
    released_at: datetime | None
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> LegalHold:
        return cls(
            id=data["id"],
            scope=data["scope"],
            run=optional_str(data.get("run")),
            reason=data["reason"],
            created_by=data["created_by"],
            created_at=at(data["created_at"]),
            active=bool(data["active"]),
            released_by=optional_str(data.get("released_by")),
            released_at=when(data.get("released_at")),
            raw=data,
        )
