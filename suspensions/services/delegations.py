"""Delegation (docs/identity.md, "Delegation"): a person away names who decides for them, from when to when, where.

A delegation is configuration, not run state: nothing here takes a run lock.
Creating or ending one is one short transaction that checks every input
before its one write; a refusal writes nothing. The person (the console's
"Away" page) delegates what they hold themselves: `approver` in a scope
covering the delegation's. An operator delegates for anyone in their
operator scopes (the API, the console, the admin).

Deciding for someone (`acting`) reads only: the delegate's principal becomes
one that acts for the delegator, holding the delegator's `approver` grants
narrowed to the scopes of the delegations active now, by the database clock.
The claim path (services/claiming.py) then treats it as any principal: its
`person` is the delegator, so a person and their delegate count once toward a
quorum, and its name stays the delegate's, the actor on every record.
"""

import logging
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from celery import current_app
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q, QuerySet

from .. import scopes
from ..clock import db_now
from ..exceptions import Forbidden, InvalidRequest, NotDelegated, NotFound
from ..models import Approval, Delegation, Role
from ..principals import Principal, for_user, has_staff_access

log = logging.getLogger("suspensions.delegations")

# The longest delegation: a year; a longer absence is a change of roles, not a delegation.
MAX_DAYS = 366
MAX_REASON = 500
# Tasks are enqueued by name: services never import the tasks module (it imports them).
ANNOUNCE_TASK = "suspensions.tasks.announce_delegations"


def user_named(username: str, field: str) -> Any:
    """An active staff user by username; 400 naming `field` otherwise."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None or not has_staff_access(user):
        problem = f"No active staff user '{username}'."
        raise InvalidRequest(problem, errors={field: [problem]})
    return user


def check_scope(principal: Principal, scope: str, *, own: bool) -> None:
    """The delegation's scope: valid, and the principal's to delegate (their own `approver`, else `operator`)."""
    if not isinstance(scope, str) or not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    role = Role.APPROVER if own else Role.OPERATOR
    if not principal.can(role, scope):
        raise Forbidden(f"the '{role}' role is required in scope '{scope}'")


def check_window(starts_at: datetime, ends_at: datetime, now: datetime) -> None:
    errors: dict[str, list[str]] = {}
    if ends_at <= now:
        errors["ends_at"] = ["Must be in the future."]
    elif ends_at <= starts_at:
        errors["ends_at"] = ["Must be after starts_at."]
    elif ends_at - starts_at > timedelta(days=MAX_DAYS):
        errors["ends_at"] = [f"A delegation lasts at most {MAX_DAYS} days."]
    if errors:
        raise InvalidRequest(errors["ends_at"][0], errors=errors)


def create_delegation(
    *,
    principal: Principal,
    to: str,
    scope: str,
    ends_at: datetime,
    starts_at: datetime | None = None,
    reason: str = "",
    from_: str | None = None,
) -> Delegation:
    """A new delegation from `from_` (an operator's choice) or from the principal's own person, to `to`.

    Refusals, before the one write (check_new): an unknown or inactive person
    (400), the same person on both ends (400), a bad scope (400) or one the
    principal may not delegate (403), a window that is empty, past or over
    MAX_DAYS (400). A delegation already started is announced to the delegate on commit.
    """
    own_user = get_user_model().objects.filter(pk=principal.user_id).first() if principal.user_id else None
    own = from_ is None or (own_user is not None and own_user.get_username() == from_)
    if own and own_user is None:
        raise InvalidRequest("from is required for a principal without a person", errors={"from": ["Required."]})
    giver = own_user if own else user_named(str(from_), "from")
    taker = user_named(to, "to")
    with transaction.atomic():
        now = db_now()
        start = check_new(
            principal=principal, giver=giver, taker=taker, scope=scope, starts_at=starts_at, ends_at=ends_at, now=now
        )
        if len(reason) > MAX_REASON:
            raise InvalidRequest("reason is too long", errors={"reason": [f"At most {MAX_REASON} characters."]})
        row = Delegation(from_user=giver, to_user=taker, starts_at=start, ends_at=ends_at, reason=reason)
        row.created_by, row.created_at = principal.name, now
        row.stamp_scope(scope)
        row.save(force_insert=True)
        _logged("created", principal, row)
        if start <= now:
            transaction.on_commit(lambda: enqueue_announce([row.id]))
    return row


def check_new(
    *,
    principal: Principal,
    giver: Any,
    taker: Any,
    scope: str,
    ends_at: datetime,
    starts_at: datetime | None = None,
    now: datetime | None = None,
) -> datetime:
    """Every check of a new delegation but the names (the admin's form asks it too); returns when it starts."""
    if not has_staff_access(giver):
        raise InvalidRequest("from is no active staff user", errors={"from": ["No active staff user."]})
    if not has_staff_access(taker):
        raise InvalidRequest("to is no active staff user", errors={"to": ["No active staff user."]})
    if taker.pk == giver.pk:
        raise InvalidRequest("a person cannot delegate to themselves", errors={"to": ["Name another person."]})
    check_scope(principal, scope, own=giver.pk == principal.user_id)
    now = now or db_now()
    start = starts_at if starts_at is not None and starts_at > now else now
    check_window(start, ends_at, now)
    return start


def delegations(principal: Principal) -> QuerySet[Delegation]:
    """The delegations a principal may see: their own (given or held) and those in their operator scopes."""
    mine = Q(from_user_id=principal.user_id) | Q(to_user_id=principal.user_id) if principal.user_id else Q(pk__in=[])
    return Delegation.objects.filter(mine | principal.scope_q(Role.OPERATOR)).select_related("from_user", "to_user")


def delegation_of(principal: Principal, delegation_id: UUID | str) -> Delegation:
    """One visible delegation (404 otherwise, leaking nothing)."""
    found = delegations(principal).filter(pk=delegation_id).first()
    if found is None:
        raise NotFound(f"delegation {delegation_id} not found")
    return found


def end_delegation(*, principal: Principal, delegation_id: UUID | str) -> Delegation:
    """End a delegation now: by its delegator, its delegate, or an operator of its scope. Locks the row.

    Ending one already ended (or past its end) answers it as it is and writes nothing.
    """
    with transaction.atomic():
        found = delegation_of(principal, delegation_id)
        found = Delegation.objects.select_for_update().select_related("from_user", "to_user").get(pk=found.pk)
        now = db_now()
        if found.ended_at is not None or found.ends_at <= now:
            return found
        found.ended_at, found.ended_by = now, principal.name
        found.save(update_fields=["ended_at", "ended_by"])
        _logged("ended", principal, found)
    return found


def active(now: datetime) -> Q:
    """Delegations holding at `now`: started, not past their end, not ended."""
    return Q(starts_at__lte=now, ends_at__gt=now, ended_at__isnull=True)


def acting(principal: Principal, username: str, scope: str | None = None) -> Principal:
    """The principal that decides for `username` through the delegations held now (403 not_delegated otherwise,
    and for `scope`, when given, unless one of them covers it and the delegator is an approver there).

    Its grants are the delegator's `approver` grants narrowed to the delegations' scopes: only there, and
    only while the delegator still may decide there themselves. Reads only.
    """
    if principal.user_id is None:
        raise NotDelegated("only a person can act for someone: this token is linked to nobody")
    giver = get_user_model().objects.filter(username=username).first()
    scopes_held: list[str] = []
    if giver is not None:
        held = Delegation.objects.filter(active(db_now()), to_user_id=principal.user_id, from_user_id=giver.pk)
        scopes_held = list(held.values_list("scope", flat=True))
    if giver is None or not scopes_held:
        raise NotDelegated(f"you hold no active delegation from '{username}'")
    grants = narrowed(for_user(giver), scopes_held)
    if scope is not None and not any(Role.APPROVER in roles and scopes.covers(s, scope) for s, roles in grants):
        raise NotDelegated(
            f"no active delegation from '{username}' covers this approval's scope, with '{username}' an approver there"
        )
    return Principal(
        name=principal.name,
        grants=grants,
        token_id=principal.token_id,
        user_id=principal.user_id,
        acting_for=f"user:{username}",
        for_user_id=giver.pk,  # type: ignore[union-attr]
    )


def narrowed(giver: Principal, delegated: list[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    """The giver's `approver` grants where they meet the delegated scopes: the deeper of each pair that nests."""
    approver = frozenset({Role.APPROVER.value})
    grants = set()
    for held in giver.scopes_with(Role.APPROVER) if not giver.superuser else list(delegated):
        for scope in delegated:
            if scopes.covers(held, scope) or scopes.covers(scope, held):
                grants.add(scope if scopes.covers(held, scope) else held)
    return tuple((s, approver) for s in sorted(grants))


def delegators_for(principal: Principal, scope: str, now: datetime) -> list[str]:
    """The usernames the principal may act for on an approval in `scope` now (the console's choice)."""
    if principal.user_id is None:
        return []
    rows = Delegation.objects.filter(active(now), to_user_id=principal.user_id).select_related("from_user")
    names = {d.from_user.get_username() for d in rows if scopes.covers(d.scope, scope)}
    return sorted(n for n in names if acting(principal, n).can(Role.APPROVER, scope))


def approval_scope(suspension_id: UUID | str) -> str | None:
    """The scope of an approval, for the delegation's check before the claim (None: let the claim answer 404)."""
    return Approval.objects.filter(pk=suspension_id).values_list("scope", flat=True).first()


def delegates_of(user_ids: list[int], scope: str, now: datetime) -> QuerySet[Delegation]:
    """The delegations held now from any of `user_ids` covering `scope`: who is told in their place."""
    covering = [prefix for prefix in scopes.levels(scope).values() if prefix]
    rows = Delegation.objects.filter(active(now), from_user_id__in=user_ids, scope__in=covering)
    return rows.select_related("to_user", "from_user").order_by("created_at", "id")


def enqueue_announce(ids: list[UUID]) -> None:
    current_app.send_task(ANNOUNCE_TASK, args=[[str(i) for i in ids]])


def _logged(change: str, principal: Principal, row: Delegation) -> None:
    fields = {"delegation_change": change, "delegation_id": str(row.id), "scope": row.scope, "actor": principal.name}
    transaction.on_commit(lambda: log.info("delegation %s %s", change, fields["delegation_id"], extra=fields))
