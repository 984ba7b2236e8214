"""SCIM 2.0 bodies (RFC 7643/7644; docs/identity.md, "Provisioning (SCIM) and leavers"): one model each validates
what a provider sends.

Unlike the API's bodies, unknown attributes are ignored, not refused:
providers send what their schema holds (titles, phone numbers, the
enterprise extension), and the service keeps what it uses. A value of the
wrong type is refused. `active` takes a JSON boolean or the strings
"True"/"False" in any case, which Microsoft Entra sends in its PATCH operations.
"""

from typing import Annotated, Any

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

__all__ = ["GroupIn", "PatchIn", "UserIn", "ValidationError", "first_problem"]

PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


def scim_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError("must be a boolean (true or false)")


def username(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    value = value.strip()
    try:
        UnicodeUsernameValidator()(value)
    except DjangoValidationError:
        raise ValueError("may contain only letters, digits and @ . + - _") from None
    return value


def email(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    try:
        validate_email(value)
    except DjangoValidationError:
        raise ValueError("is not an email address") from None
    return value


ScimBool = Annotated[bool, BeforeValidator(scim_bool)]
UserName = Annotated[str, BeforeValidator(username), Field(max_length=150)]
Text = Annotated[str, Field(max_length=255, strict=True)]


class Resource(BaseModel):
    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True, populate_by_name=True)


class Name(Resource):
    given_name: Text = Field("", alias="givenName")
    family_name: Text = Field("", alias="familyName")


class Email(Resource):
    value: Annotated[str, BeforeValidator(email), Field(max_length=254)]
    primary: ScimBool = False
    type: Text = ""


class UserIn(Resource):
    """A SCIM User: userName is the person's username; the primary (else first) email is theirs."""

    user_name: UserName = Field(alias="userName")
    active: ScimBool = True
    external_id: Text = Field("", alias="externalId")
    name: Name = Field(default_factory=lambda: Name())
    emails: list[Email] = Field(default_factory=list, max_length=20)

    def email(self) -> str:
        chosen = sorted(self.emails, key=lambda e: not e.primary)
        return chosen[0].value if chosen else ""


class Member(Resource):
    value: Annotated[str, Field(min_length=1, max_length=64, strict=True)]


class GroupIn(Resource):
    """A SCIM Group: its display name (the group the role mappings name) and its members by SCIM id."""

    display_name: Annotated[str, Field(min_length=1, max_length=255, strict=True)] = Field(alias="displayName")
    external_id: Text = Field("", alias="externalId")
    members: list[Member] = Field(default_factory=list, max_length=10_000)


class Operation(Resource):
    op: Annotated[str, Field(pattern=r"(?i)^(add|remove|replace)$", strict=True)]
    path: Annotated[str, Field(min_length=1, max_length=500, strict=True)] | None = None
    value: Any = None


class PatchIn(Resource):
    """A SCIM PatchOp: 1 to 1,000 operations, applied in order, all or none."""

    operations: list[Operation] = Field(alias="Operations", min_length=1, max_length=1000)


def first_problem(error: ValidationError) -> str:
    """The first refusal as one sentence naming the attribute (a SCIM error has one `detail`)."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}"
