"""Roles from the identity provider's groups (docs/identity.md, "How roles map").

Operators map a provider group to a role in a scope (RoleMapping). A person's
provider-given memberships (Membership.source = provider) are rewritten only
here, by sync_roles, which the OpenID Connect sign-in (suspensions/oidc.py)
and the SCIM provisioning calls run with the groups the provider gave.
Memberships granted by hand (admin, createuser) are never touched. Every
role added or removed is one RoleChange row, for auditors.

The API, the console and the admin call these functions.
"""

import logging
from collections.abc import Collection
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from .. import scopes, selectors
from ..clock import db_now
from ..exceptions import Forbidden, InvalidRequest
from ..models import Membership, MembershipSource, Role, RoleChange, RoleChangeKind, RoleMapping
from ..principals import STAFF_ROLES, Principal
from .webhooks import operator_row, operator_scope, require_operator

log = logging.getLogger("suspensions.identity")

MAX_GROUP = 255
MAX_CAUSE = 500
# A person's roles only: engine and bus are machines' roles, held by tokens (principals.STAFF_ROLES).
MAPPABLE = tuple(sorted(STAFF_ROLES))


def sync_roles(user: Any, groups: Collection[str], *, cause: str, by: str = "identity provider") -> None:
    """Make `user`'s provider-given roles exactly those the RoleMapping rows of `groups` give.

    The entry point for every caller that learns a person's groups from the
    provider: the OpenID Connect sign-in and its re-checks, and SCIM
    provisioning (Users, Groups, deactivation with no groups at all).

    - Hand-granted memberships (source = hand) are left as they are, even for
      the same scope and role.
    - Each provider membership added or removed is one RoleChange {user,
      scope, role, added|removed, by, at, cause}; `cause` names the sign-in
      or SCIM call ("oidc sign-in <issuer> <sub>", "scim PATCH /Users/<id>"),
      `by` who made it. Nothing is written when nothing changes.
    - One transaction; the user row is locked first (FOR NO KEY UPDATE), so two
      syncs of one person run one after the other and the second sees the
      first's rows. Safe to call inside a caller's transaction.
    """
    wanted = mapped_roles(groups)
    cause = cause[:MAX_CAUSE]
    with transaction.atomic():
        get_user_model().objects.select_for_update(no_key=True).filter(pk=user.pk).first()
        held = set(Membership.objects.filter(user=user, source=MembershipSource.PROVIDER).values_list("scope", "role"))
        added, removed = wanted - held, held - wanted
        if not added and not removed:
            return
        now = db_now()
        _remove(user, removed)
        _add(user, added)
        changes = [(s, r, RoleChangeKind.ADDED) for s, r in sorted(added)]
        changes += [(s, r, RoleChangeKind.REMOVED) for s, r in sorted(removed)]
        RoleChange.objects.bulk_create(_change(user, *c, by=by, cause=cause, at=now) for c in changes)
    log.info("roles of %s from groups: +%s -%s (%s)", user.get_username(), sorted(added), sorted(removed), cause)


def mapped_roles(groups: Collection[str]) -> set[tuple[str, str]]:
    """The (scope, role) pairs the mappings give to members of `groups`."""
    names = [g for g in groups if isinstance(g, str)]
    return set(RoleMapping.objects.filter(group__in=names).values_list("scope", "role"))


def _add(user: Any, pairs: set[tuple[str, str]]) -> None:
    rows = []
    for scope, role in sorted(pairs):
        row = Membership(user=user, role=role, source=MembershipSource.PROVIDER)
        row.stamp_scope(scope)
        rows.append(row)
    Membership.objects.bulk_create(rows)


def _remove(user: Any, pairs: set[tuple[str, str]]) -> None:
    for scope, role in pairs:
        Membership.objects.filter(user=user, scope=scope, role=role, source=MembershipSource.PROVIDER).delete()


def _change(user: Any, scope: str, role: str, kind: str, *, by: str, cause: str, at: Any) -> RoleChange:
    row = RoleChange(
        user_id=user.pk, username=user.get_username(), role=role, change=kind, by=by[:200], cause=cause, at=at
    )
    row.stamp_scope(scope)
    return row


# -- the operators' mappings ------------------------------------------------------------------


def mapping_of(principal: Principal, mapping_id: UUID | str) -> RoleMapping:
    """A mapping in the principal's operator scopes (404 otherwise, leaking nothing)."""
    return operator_row(principal, selectors.role_mappings(principal), mapping_id, "role mapping")


def check_mapping(*, group: Any, scope: Any, role: Any) -> None:
    """400 invalid_request naming the field, for a group, scope or role a mapping may not have."""
    if not isinstance(group, str) or not group.strip() or len(group) > MAX_GROUP:
        raise InvalidRequest("group is required", errors={"group": [f"A group name, 1 to {MAX_GROUP} characters."]})
    if not isinstance(scope, str) or not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    if role not in MAPPABLE:
        raise InvalidRequest("role may not be mapped", errors={"role": [f"One of {', '.join(MAPPABLE)}."]})


def create_mapping(*, principal: Principal, group: str, scope: str | None, role: str) -> RoleMapping:
    """A new mapping: members of `group` get `role` in `scope` at their next sign-in or provisioning call.

    Without a scope, the one scope where the principal is an operator.
    Refuses a bad field (400), a scope where the principal is not an operator
    (403) and a mapping that exists already (400), before writing.
    """
    require_operator(principal)
    scope = operator_scope(principal, scope, "role mapping")
    check_mapping(group=group, scope=scope, role=role)
    if not principal.can(Role.OPERATOR, scope):
        raise Forbidden(f"the 'operator' role is required in scope '{scope}'")
    mapping = RoleMapping(group=group.strip(), role=role, created_by=principal.name, created_at=db_now())
    mapping.stamp_scope(scope)
    try:
        with transaction.atomic():
            mapping.save(force_insert=True)
    except IntegrityError:
        # The unique constraint is the check: two concurrent creates cannot both pass it.
        raise InvalidRequest(
            "this mapping exists already", errors={"group": ["This group has this role in this scope already."]}
        ) from None
    log.info("role mapping %s created by %s", mapping, principal.name)
    return mapping


def delete_mapping(*, principal: Principal, mapping_id: UUID | str) -> RoleMapping:
    """Remove a mapping; its members lose the role at their next sign-in or provisioning call."""
    with transaction.atomic():
        mapping = operator_row(principal, selectors.role_mappings(principal), mapping_id, "role mapping", lock=True)
        pk = mapping.pk
        mapping.delete()
        mapping.pk = pk  # answered as it was, id included
    log.info("role mapping %s deleted by %s", mapping, principal.name)
    return mapping
