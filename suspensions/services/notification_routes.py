"""Notification routes (docs/notifications.md, "Routes"): operators add an email address or a Slack channel to a scope's
approvals.

Routes are configuration, managed like webhook endpoints (services.webhooks:
the same operator rule, the same scoping, the same event-type check): no run
lock, no Event; each change is one short transaction on the one route row,
logged once it commits. Every input is checked before the first write. A
route receives its scope's approvals and those of every scope below it;
approvers get their own email without one (services.notifications).
"""

import logging
import re
from typing import Any
from uuid import UUID

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from .. import scopes, selectors
from ..clock import db_now
from ..exceptions import Forbidden, InvalidRequest
from ..models import ROUTE_EVENT_TYPES, NotificationChannel, NotificationRoute, Role, SlackChannel
from ..principals import Principal
from .webhooks import MAX_DESCRIPTION, check_event_types, operator_row, operator_scope
from .webhooks import require_operator as require_operator  # the webhooks' rule: operators only

log = logging.getLogger("suspensions.notification_routes")

MAX_EMAIL = 320
# A Slack conversation id: C (public channel), G (private or group) or D (direct message), then upper-case base 36.
SLACK_CHANNEL = re.compile(r"[CGD][A-Z0-9]{2,63}")


def check_target(kind: Any, target: Any, *, scope: str | None = None) -> str:
    """An email route's address (Django's validator) or a Slack route's channel id; 400 otherwise.

    With `scope`, a Slack channel granted to another scope (one not covering
    `scope`) is refused too (check_grant): one tenant never posts into
    another's channel.
    """
    if kind not in NotificationChannel.values:
        raise InvalidRequest("kind is unknown", errors={"kind": [f"One of {', '.join(NotificationChannel.values)}."]})
    if not isinstance(target, str) or not target:
        raise InvalidRequest("target is required", errors={"target": ["Give an email address or a Slack channel id."]})
    if kind == NotificationChannel.SLACK:
        if not SLACK_CHANNEL.fullmatch(target):
            detail = "A Slack channel id, like C0123ABC (not its #name)."
            raise InvalidRequest("target is not a Slack channel id", errors={"target": [detail]})
        if scope is not None:
            check_grant(target, scope, selectors.slack_channel_grant(target))
        return target
    try:
        if len(target) > MAX_EMAIL:
            raise ValidationError("too long")
        validate_email(target)
    except ValidationError:
        raise InvalidRequest("target is not an email address", errors={"target": ["Not an email address."]}) from None
    return target


def check_grant(channel_id: str, scope: str, grant: SlackChannel | None) -> None:
    """400 naming `target` when Slack channel `channel_id` is granted to a scope that does not cover `scope`.

    A channel granted to nobody passes: the route that names it first claims
    it for its workspace (create_route).
    """
    if grant is not None and not scopes.covers(grant.scope, scope):
        detail = f"Slack channel {channel_id} is granted to a scope other than '{scope}' or above it; ask a superuser."
        raise InvalidRequest("target is a Slack channel granted to another scope", errors={"target": [detail]})


def _claimed(channel_id: str, scope: str, principal: Principal) -> None:
    """The channel's grant, made for `scope`'s workspace if nobody holds it; 400 if another scope won it meanwhile."""
    workspace = scopes.path(scope)[0]
    note = f"claimed by the first route to it, of {scope}, by {principal.name}"
    grant, _ = SlackChannel.objects.get_or_create(channel_id=channel_id, defaults={"scope": workspace, "note": note})
    check_grant(channel_id, scope, grant)


def route_of(principal: Principal, route_id: UUID | str, *, lock: bool = False) -> NotificationRoute:
    """A route in the principal's operator scopes (404 otherwise, leaking nothing)."""
    return operator_row(principal, selectors.notification_routes(principal), route_id, "notification route", lock=lock)


def create_route(
    *,
    principal: Principal,
    scope: str | None,
    kind: str,
    target: str,
    event_types: list[str],
    description: str = "",
) -> NotificationRoute:
    """A new active route of `scope` (without one: the one scope where the principal is an operator).

    Refuses a bad field (400), a scope where the principal is not an
    operator (403) and a Slack channel granted to another scope (400)
    before writing; a channel nobody holds is granted to the route's
    workspace in the same transaction (docs/notifications.md, Granting a
    channel). Not idempotent: a retried create makes a second route
    (it asks nobody twice: notifications are one per recipient).
    """
    require_operator(principal)
    scope = operator_scope(principal, scope, "route")
    if not isinstance(scope, str) or not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    target = check_target(kind, target)
    types = check_event_types(event_types, ROUTE_EVENT_TYPES)
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise InvalidRequest("description is too long", errors={"description": [f"At most {MAX_DESCRIPTION}."]})
    if not principal.can(Role.OPERATOR, scope):
        raise Forbidden(f"the 'operator' role is required in scope '{scope}'")
    # After the role: whether a channel is granted here is for this scope's operators to learn.
    check_target(kind, target, scope=scope)
    with transaction.atomic():
        route = NotificationRoute(
            kind=kind,
            target=target,
            event_types=types,
            description=description,
            created_by=principal.name,
            created_at=db_now(),
        )
        if kind == NotificationChannel.SLACK:
            _claimed(target, scope, principal)
        route.stamp_scope(scope)
        route.save(force_insert=True)
        _logged("created", principal, route)
    return route


def set_active(*, principal: Principal, route_id: UUID | str, active: bool) -> NotificationRoute:
    """Enable or disable a route; the same state again changes nothing. Locks the route row."""
    with transaction.atomic():
        route = route_of(principal, route_id, lock=True)
        if route.active != active:
            route.active = active
            route.save(update_fields=["active"])
            _logged("enabled" if active else "disabled", principal, route)
    return route


def delete_route(*, principal: Principal, route_id: UUID | str) -> NotificationRoute:
    """Remove a route and answer it as it was; notifications it asked for are kept. Locks the row."""
    with transaction.atomic():
        route = route_of(principal, route_id, lock=True)
        NotificationRoute.objects.filter(pk=route.pk).delete()
        _logged("deleted", principal, route)
    return route


def _logged(change: str, principal: Principal, route: NotificationRoute) -> None:
    """One INFO line once the change commits; the kind, never the address (a person's email)."""
    fields = {"route_change": change, "route_id": str(route.id), "scope": route.scope, "kind": route.kind}
    fields["actor"] = principal.name
    transaction.on_commit(lambda: log.info("notification route %s %s", change, fields["route_id"], extra=fields))
