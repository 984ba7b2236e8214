"""Provisioning by the company's identity provider (docs/identity.md, "Provisioning (SCIM) and leavers").

The SCIM door (suspensions/scim/) validates a whole request first and then
calls one function here, which writes in one transaction: a refused request
writes nothing. A person taken out (`active: false`, or a DELETE) is out at
once, by the same switch everything already reads on every request:
`is_active`. Their tokens stop (tokens.live_token joins it), their emailed
links and Slack presses are refused (principals.for_user grants an inactive
user nothing), nothing new is sent to them (selectors.approvers_covering); and
here, in the same transaction, their console and admin sessions are deleted
and the notifications still waiting to reach them are failed.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import transaction
from django.utils import timezone

from ..models import MessageStatus, Notification, ScimGroup, ScimUser
from .role_mappings import sync_roles

log = logging.getLogger(__name__)

LEFT = "not sent: the recipient was deprovisioned"
# Who a role change by SCIM was made by, on its RoleChange row; the cause names the call and the token.
BY = "identity provider (SCIM)"


@dataclass(frozen=True)
class Person:
    """What the provider says of a person: a SCIM User, already validated."""

    username: str
    active: bool = True
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    external_id: str = ""


@dataclass(frozen=True)
class Team:
    """What the provider says of a group: a SCIM Group, already validated; members by user id."""

    display_name: str
    external_id: str = ""
    member_ids: frozenset[int] = field(default_factory=frozenset)


class Conflict(Exception):
    """The username or group name belongs to another provisioned resource (SCIM 409 uniqueness)."""


def provision_person(*, person: Person, cause: str) -> ScimUser:
    """Create a person, or adopt the account of that username that no provider has claimed yet.

    Adopted: an account made by hand (`createuser`) becomes the provider's, keeping its memberships.
    Raises Conflict when a provisioned person already has the username. One transaction.
    """
    users = get_user_model().objects
    with transaction.atomic():
        user = users.select_for_update().filter(username=person.username).first()
        if user is not None and ScimUser.objects.filter(user=user).exists():
            raise Conflict(f"userName {person.username!r} is already provisioned")
        if user is None:
            user = users.model(username=person.username, is_staff=True)
            user.set_unusable_password()
        was_active = user.pk is not None and user.is_active
        _write_person(user, person)
        scim = ScimUser.objects.create(user=user, external_id=person.external_id)
        if was_active and not person.active:
            _take_out(user.pk, cause)
    return scim


def update_person(*, scim_user: ScimUser, person: Person, cause: str) -> ScimUser:
    """Replace what the provider says of a provisioned person; `active` false takes them out at once.

    Raises Conflict when the new username is another account's. One transaction.
    """
    users = get_user_model().objects
    with transaction.atomic():
        lock_scim_user(scim_user.pk)
        user = users.select_for_update().get(pk=scim_user.user_id)
        if person.username != user.username and users.filter(username=person.username).exists():
            raise Conflict(f"userName {person.username!r} is already taken")
        was_active = user.is_active
        _write_person(user, person)
        ScimUser.objects.filter(pk=scim_user.pk).update(external_id=person.external_id, updated_at=timezone.now())
        if was_active and not person.active:
            _take_out(user.pk, cause)
    scim_user.refresh_from_db()
    return scim_user


def deprovision_person(*, scim_user: ScimUser, cause: str) -> None:
    """A SCIM DELETE: the person is taken out and forgotten by the provider (later lookups are 404).

    The account itself stays, inactive: the audit trail names it. Their SCIM
    group memberships go with it, and the roles they gave. One transaction.
    """
    users = get_user_model().objects
    with transaction.atomic():
        # The lock order: the person's groups (as a group change takes them first), their SCIM row, the user.
        list(ScimGroup.objects.select_for_update().filter(members=scim_user.user_id).order_by("pk"))
        lock_scim_user(scim_user.pk)
        user = users.select_for_update().get(pk=scim_user.user_id)
        users.filter(pk=user.pk).update(is_active=False)
        _take_out(user.pk, cause)
        user.scim_groups.clear()
        ScimUser.objects.filter(pk=scim_user.pk).delete()
        groups_changed([user.pk], cause=cause)


def lock_scim_user(pk: int) -> ScimUser:
    """Lock a provisioned person's SCIM row. The lock order is: a group (a group change, or all of the person's
    for a DELETE), the ScimUser row, the user (role_mappings.sync_roles locks it too). A PATCH takes this lock
    before it reads what it changes, so two calls on one person run one after the other, the second on the
    first's result."""
    return ScimUser.objects.select_for_update(of=("self",)).select_related("user").get(pk=pk)


def lock_group(pk: int) -> ScimGroup:
    """Lock a SCIM group's row, before reading its members: concurrent changes of one group queue on it."""
    return ScimGroup.objects.select_for_update().get(pk=pk)


def _write_person(user: Any, person: Person) -> None:
    user.username = person.username
    user.email = person.email
    user.first_name = person.first_name[:150]
    user.last_name = person.last_name[:150]
    user.is_active = person.active
    user.save()


def _take_out(user_id: int, cause: str) -> None:
    """End the person's sessions and fail what was still waiting to reach them, in the caller's transaction."""
    ended = end_sessions(user_id)
    failed = Notification.objects.filter(user_id=user_id, status=MessageStatus.PENDING).update(
        status=MessageStatus.FAILED, last_error=LEFT
    )
    log.info("person %s taken out by %s: %d sessions ended, %d notifications stopped", user_id, cause, ended, failed)


def end_sessions(user_id: int) -> int:
    """Delete every live session of the user (console and admin); the count deleted.

    Sessions hold the user id only inside their signed data, so each live
    one is decoded: a leaver is rare, and this runs once for them.
    """
    ids = [s.pk for s in Session.objects.filter(expire_date__gt=timezone.now()) if _owner(s) == str(user_id)]
    Session.objects.filter(pk__in=ids).delete()
    return len(ids)


def _owner(session: Session) -> str:
    return str(session.get_decoded().get("_auth_user_id", ""))


def create_team(*, team: Team, cause: str) -> ScimGroup:
    """A new SCIM group and its members. Raises Conflict on a display name already used. One transaction."""
    with transaction.atomic():
        if ScimGroup.objects.filter(display_name=team.display_name).exists():
            raise Conflict(f"displayName {team.display_name!r} is already a group")
        group = ScimGroup.objects.create(display_name=team.display_name, external_id=team.external_id)
        group.members.set(team.member_ids)
        groups_changed(team.member_ids, cause=cause)
    return group


def update_team(*, group: ScimGroup, team: Team, cause: str) -> ScimGroup:
    """Replace a group's name and members; the roles of everyone who joined or left follow. One transaction."""
    with transaction.atomic():
        locked = lock_group(group.pk)
        clash = ScimGroup.objects.filter(display_name=team.display_name).exclude(pk=locked.pk)
        if clash.exists():
            raise Conflict(f"displayName {team.display_name!r} is already a group")
        before = set(locked.members.values_list("pk", flat=True))
        locked.display_name, locked.external_id = team.display_name, team.external_id
        locked.save()
        locked.members.set(team.member_ids)
        groups_changed(before ^ set(team.member_ids) | _renamed(group, team, before), cause=cause)
    return locked


def _renamed(group: ScimGroup, team: Team, before: set[int]) -> set[int]:
    # A new name may map to other roles: every member's roles are recomputed.
    return before if group.display_name != team.display_name else set()


def delete_team(*, group: ScimGroup, cause: str) -> None:
    """A SCIM DELETE of a group: its members lose what it gave them. One transaction."""
    with transaction.atomic():
        lock_group(group.pk)
        members = set(group.members.values_list("pk", flat=True))
        ScimGroup.objects.filter(pk=group.pk).delete()
        groups_changed(members, cause=cause)


def groups_changed(user_ids: Iterable[int], *, cause: str) -> None:
    """The people whose SCIM groups changed: their provider-given roles become what their groups map to, now.

    In the caller's transaction; people in id order (role_mappings.sync_roles locks each one's row), so two
    group changes sharing members lock them in the same order. Each role added or removed is a RoleChange
    whose cause is the SCIM call (docs/identity.md, "Groups").
    """
    people = get_user_model().objects.filter(pk__in=set(user_ids)).order_by("pk")
    for user in people:
        groups = list(ScimGroup.objects.filter(members=user).values_list("display_name", flat=True))
        sync_roles(user, groups, cause=cause, by=BY)
