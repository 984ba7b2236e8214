"""SCIM Users and Groups over this service's people (docs/identity.md, "Provisioning (SCIM) and leavers"):
django-scim2's adapters, with reading and writing done here.

An adapter turns a request's body into a validated Person or Team (wire/scim.py
and patching.py) and hands it to one provisioning service, which writes it
in one transaction: everything that can refuse runs before that call.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.urls import reverse
from django_scim import adapters
from django_scim.constants import SchemaURI
from django_scim.exceptions import BadRequestError, IntegrityError, NotFoundError

from ..models import ScimGroup, ScimUser
from ..services import provisioning
from ..wire.scim import GroupIn, PatchIn, UserIn, ValidationError, first_problem
from . import patching


def validated(model: Any, body: Any) -> Any:
    if not isinstance(body, dict):
        raise BadRequestError("the body must be a JSON object", scim_type="invalidSyntax")
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise BadRequestError(first_problem(error), scim_type="invalidValue") from None


def cause_of(request: Any) -> str:
    """What caused a change, for the logs and the roles' history: the SCIM call and who made it."""
    who = getattr(getattr(request, "scim_principal", None), "name", "unknown")
    return f"SCIM {request.method} {request.path} by {who}"[:300]


class Adapter:
    """What both resources share: a body is read by `validate_dict`, written by `save`."""

    obj: Any
    request: Any
    wanted: Any = None

    def validate_dict(self, d: Any) -> None:
        self.wanted = self.read(d)

    def from_dict(self, d: Any) -> None:
        """Nothing: validate_dict read the body, and nothing touches the model before `save`."""

    def handle_operations(self, operations: Any) -> None:
        """PATCH, inside the library's transaction: the row is locked before its state is read, so concurrent
        PATCHes of one resource (two members added at once) apply one after the other, none lost."""
        patch = validated(PatchIn, {"Operations": operations})
        with self.still_there():
            self.obj = self.lock(self.obj.pk)
        self.wanted = self.read(patching.apply(self.state(), patch.operations, self.paths))
        self.save()

    def save(self) -> None:
        try:
            with self.still_there():
                self.obj = self.write(self.wanted)
        except provisioning.Conflict as conflict:
            raise IntegrityError(str(conflict), scim_type="uniqueness") from None

    @contextmanager
    def still_there(self) -> Iterator[None]:
        """A resource deleted by a concurrent call after this one found it is a 404, as if never found."""
        try:
            yield
        except ObjectDoesNotExist:
            raise NotFoundError(self.id) from None  # type: ignore[attr-defined]

    def meta(self) -> dict[str, Any]:
        return {
            "resourceType": self.resource_type,  # type: ignore[attr-defined]
            "created": self.obj.created_at.isoformat(),
            "lastModified": self.obj.updated_at.isoformat(),
            "location": self.location,  # type: ignore[attr-defined]
        }

    def read(self, body: Any) -> Any:
        raise NotImplementedError

    def lock(self, pk: int) -> Any:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        raise NotImplementedError

    def write(self, wanted: Any) -> Any:
        raise NotImplementedError

    paths: dict[str, Any] = {}


class User(Adapter, adapters.SCIMUser):
    """A person: userName is their username; `active: false` takes them out at once."""

    paths = patching.USER

    def read(self, body: Any) -> provisioning.Person:
        user = validated(UserIn, body)
        return provisioning.Person(
            username=user.user_name,
            active=user.active,
            email=user.email(),
            first_name=user.name.given_name,
            last_name=user.name.family_name,
            external_id=user.external_id,
        )

    def lock(self, pk: int) -> ScimUser:
        return provisioning.lock_scim_user(pk)

    def write(self, wanted: provisioning.Person) -> ScimUser:
        cause = cause_of(self.request)
        if self.obj.pk is None:
            return provisioning.provision_person(person=wanted, cause=cause)
        return provisioning.update_person(scim_user=self.obj, person=wanted, cause=cause)

    def delete(self) -> None:
        with self.still_there():
            provisioning.deprovision_person(scim_user=self.obj, cause=cause_of(self.request))

    def state(self) -> dict[str, Any]:
        user = self.obj.user
        return {
            "userName": user.username,
            "active": user.is_active,
            "externalId": self.obj.external_id,
            "name": {"givenName": user.first_name, "familyName": user.last_name},
            "emails": [{"value": user.email, "primary": True, "type": "work"}] if user.email else [],
        }

    def to_dict(self) -> dict[str, Any]:
        user = self.obj.user
        shown = self.state()
        shown.update(
            schemas=[SchemaURI.USER],
            id=self.id,
            displayName=" ".join(p for p in (user.first_name, user.last_name) if p) or user.username,
            groups=[_group_ref(g, self.request) for g in user.scim_groups.order_by("display_name")],
            meta=self.meta(),
        )
        return shown


class Group(Adapter, adapters.SCIMGroup):
    """A provider's group: its display name is what the role mappings name."""

    paths = patching.GROUP

    def read(self, body: Any) -> provisioning.Team:
        group = validated(GroupIn, body)
        wanted = {m.value for m in group.members}
        found = dict(ScimUser.objects.filter(scim_id__in=wanted).values_list("scim_id", "user_id"))
        unknown = sorted(wanted - set(found))
        if unknown:
            raise BadRequestError(f"members: no provisioned user has id {unknown[0]!r}", scim_type="invalidValue")
        return provisioning.Team(
            display_name=group.display_name, external_id=group.external_id, member_ids=frozenset(found.values())
        )

    def lock(self, pk: int) -> ScimGroup:
        return provisioning.lock_group(pk)

    def write(self, wanted: provisioning.Team) -> ScimGroup:
        cause = cause_of(self.request)
        if self.obj.pk is None:
            return provisioning.create_team(team=wanted, cause=cause)
        return provisioning.update_team(group=self.obj, team=wanted, cause=cause)

    def delete(self) -> None:
        with self.still_there():
            provisioning.delete_team(group=self.obj, cause=cause_of(self.request))

    @property
    def display_name(self) -> str:
        return str(self.obj.display_name)

    def state(self) -> dict[str, Any]:
        return {
            "displayName": self.obj.display_name,
            "externalId": self.obj.external_id,
            "members": [{"value": s} for s in self._member_ids()],
        }

    def _member_ids(self) -> list[str]:
        return list(
            ScimUser.objects.filter(user__scim_groups=self.obj).order_by("scim_id").values_list("scim_id", flat=True)
        )

    def to_dict(self) -> dict[str, Any]:
        members = ScimUser.objects.filter(user__scim_groups=self.obj).select_related("user").order_by("scim_id")
        return {
            "schemas": [SchemaURI.GROUP],
            "id": self.id,
            "displayName": self.obj.display_name,
            "externalId": self.obj.external_id,
            "members": [_user_ref(m, self.request) for m in members],
            "meta": self.meta(),
        }


def _group_ref(group: ScimGroup, request: Any) -> dict[str, str]:
    return {"value": group.scim_id, "display": group.display_name, "$ref": _location(request, "groups", group.scim_id)}


def _user_ref(scim_user: ScimUser, request: Any) -> dict[str, str]:
    ref = _location(request, "users", scim_user.scim_id)
    return {"value": scim_user.scim_id, "display": scim_user.user.username, "$ref": ref}


def _location(request: Any, name: str, scim_id: str) -> str:
    return str(request.build_absolute_uri(reverse(f"scim:{name}", kwargs={"uuid": scim_id})))
