"""The operators' and auditors' identity and retention endpoints, each as one `Call`: role mappings, role changes
and legal holds (docs/api.md §7.14, "Legal holds", and §7.15).

The creates carry an `Idempotency-Key` (`keyed`), so a resend after a lost
answer gets the first answer back. Deleting a mapping and releasing a hold
are not resent (a resend would be a 404 or a 409): `ConnectionLost(maybe_applied=True)`.
"""

from __future__ import annotations

from ._calls import compact, of, page_of, query
from ._transport import Call, keyed, segment
from .models import Page, Run
from .records_admin import LegalHold, RoleChange, RoleMapping

# -- role mappings (operator) and role changes (auditor or operator) ------------------------------


def create_role_mapping(
    *, group: str, role: str, scope: str | None = None, idempotency_key: str | None = None
) -> Call[RoleMapping]:
    """Members of the provider's `group` get `role` (approver, auditor or operator) in `scope` and below it.

    `scope` may be left out by an operator of exactly one scope. A resend after
    a lost answer carries the same `Idempotency-Key` and gets the first answer back.
    """
    body = compact(group=group, scope=scope, role=role)
    return keyed("POST", "/role-mappings", of(RoleMapping.from_json), body, idempotency_key=idempotency_key)


def list_role_mappings(*, cursor: str | None = None, page_size: int | None = None) -> Call[Page[RoleMapping]]:
    """The mappings of the caller's operator scopes, newest first."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", "/role-mappings", page_of(RoleMapping.from_json), params=params)


def get_role_mapping(mapping_id: str) -> Call[RoleMapping]:
    """One role mapping."""
    return Call("GET", f"/role-mappings/{segment(mapping_id)}", of(RoleMapping.from_json))


def delete_role_mapping(mapping_id: str) -> Call[RoleMapping]:
    """Delete a mapping; answers it as it was. Not resent after a lost answer (a resend would be a 404)."""
    return Call("DELETE", f"/role-mappings/{segment(mapping_id)}", of(RoleMapping.from_json), resend=False)


def list_role_changes(*, cursor: str | None = None, page_size: int | None = None) -> Call[Page[RoleChange]]:
    """Provider-given roles added to or removed from people in the caller's auditor or operator scopes, newest first."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", "/role-changes", page_of(RoleChange.from_json), params=params)


# -- legal holds (auditor or operator) ------------------------------------------------------------


def create_legal_hold(
    *, reason: str, scope: str | None = None, run: str | Run | None = None, idempotency_key: str | None = None
) -> Call[LegalHold]:
    """Keep the events of every run of `scope` and below it, or of one `run`, past the retention; exactly one.

    A resend after a lost answer carries the same `Idempotency-Key` and gets the first answer back.
    """
    body = compact(scope=scope, run=run.id if isinstance(run, Run) else run, reason=reason)
    return keyed("POST", "/legal-holds", of(LegalHold.from_json), body, idempotency_key=idempotency_key)


def list_legal_holds(*, cursor: str | None = None, page_size: int | None = None) -> Call[Page[LegalHold]]:
    """The holds of the caller's auditor and operator scopes, newest first, released ones included."""
    params = query(cursor=cursor, page_size=page_size)
    return Call("GET", "/legal-holds", page_of(LegalHold.from_json), params=params)


def release_legal_hold(hold_id: str) -> Call[LegalHold]:
    """End a hold; answers it released. Not resent after a lost answer (a resend would be a 409 invalid_state)."""
    return Call("POST", f"/legal-holds/{segment(hold_id)}/release", of(LegalHold.from_json), resend=False)
