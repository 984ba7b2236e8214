"""What every request body shares (docs/api.md, "5. Digests and bounds"; docs/decisions.md, "One declaration per
shape"): its config, the field types of the contract, its refusals as problem+json `errors`, and its JSON Schema in
OpenAPI 3.0's dialect.

A request body is one `Body` model: strict JSON types (no "3" for 3, no 3 for
"3", no 1 for true), unknown keys refused (a misspelt field must not be
silently dropped), and an optional field is `T | MISSING`: it may be left out,
but not sent as null unless its type says `| None`. The strings come from the
strict JSON reader (suspensions.strictjson), which has already refused U+0000
and unpaired surrogates anywhere in the body.
"""

import base64
import binascii
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, NoReturn, TypeVar

from django.utils.dateparse import parse_datetime
from pydantic import (
    MISSING,
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from .. import digests, display, strictjson, tags
from ..strictjson import MAX_SAFE_INTEGER

__all__ = ["MISSING", "Body", "field_errors", "given", "refuse"]

MAX_TTL = 10 * 365 * 86400
T = TypeVar("T")
D = TypeVar("D")


class Body(BaseModel):
    """A request body, validated from the strictly parsed JSON (`Model.model_validate(request.data)`)."""

    model_config = ConfigDict(strict=True, extra="forbid", hide_input_in_errors=True)


class Open(Body):
    """An object that keeps the keys it does not type (a message's provider extras)."""

    model_config = ConfigDict(extra="allow")


def given(value: "T | MISSING", default: D) -> T | D:
    """A field's value, or `default` when the body left it out."""
    return default if value is MISSING else value


def refuse(message: str, *at: str | int) -> NoReturn:
    """Refuse the body from a model's own check, at the field path `at` below the model (`errors` names it)."""
    raise PydanticCustomError("invalid", message, {"at": at})


# -- the field types ----------------------------------------------------------------------------

# A pause's reason: models.Reason's values (tests/api/test_bodies.py holds them together).
ReasonName = Literal["approval", "external_tool", "agent_reply"]
# At most ±2^53 unless the field says less: beyond it a JSON reader may round the value.
Int = Annotated[int, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
Count = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]
Revision = Annotated[int, Field(ge=1, le=MAX_SAFE_INTEGER)]
Ttl = Annotated[int, Field(ge=0, le=MAX_TTL)]
Bool = bool
# A finite number (the strict reader refuses NaN and the infinities); an integer is a number.
Number = float


def _no_control(value: Any) -> Any:
    if type(value) is str and display.has_control(value):
        raise PydanticCustomError("control_characters", display.RULE)
    return value


# Strings are trimmed unless they are `Kept` (what is digested, key material, text kept byte for byte): " x " reads
# as "x", and a string of spaces is blank; lengths count the trimmed string.
Trimmed = Annotated[str, StringConstraints(strip_whitespace=True)]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Kept = Annotated[str, StringConstraints(min_length=1)]
# A name or id a person is shown (a tool name, an agent id): no control characters (suspensions/display.py),
# checked on the string as sent, before it is trimmed.
Shown = Annotated[Text, BeforeValidator(_no_control)]
ShownKept = Annotated[Kept, BeforeValidator(_no_control)]
ShownOrBlank = Annotated[Trimmed, BeforeValidator(_no_control)]
ShownKeptOrBlank = Annotated[str, BeforeValidator(_no_control)]
Shown200 = Annotated[Shown, Field(max_length=200)]


def _json_text(value: str) -> str:
    try:
        strictjson.loads(value)
    except strictjson.StrictJSONError as exc:
        raise PydanticCustomError("json_text", "Must be a string holding valid JSON: {reason}.", {"reason": str(exc)})
    return value  # never a re-encoding: the retained text is the one sent


# A string holding JSON (arguments, input): read by the same reader as bodies, kept as sent.
JSONText = Annotated[Kept, AfterValidator(_json_text)]


def _base64(value: str) -> str:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise PydanticCustomError("base64", "Must be base64.") from None
    return value


Base64 = Annotated[str, AfterValidator(_base64), Field(description="Base64.")]


def _uuid(value: Any) -> uuid.UUID:
    if type(value) is str:
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise PydanticCustomError("uuid", "Must be a valid UUID.")


Uuid = Annotated[uuid.UUID, BeforeValidator(_uuid), WithJsonSchema({"type": "string", "format": "uuid"})]


def _tags(value: list[str]) -> list[str]:
    if not tags.valid(value):
        raise PydanticCustomError("tags", tags.RULE)
    return value


Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=tags.MAX_LENGTH)]],
    Field(max_length=tags.MAX_TAGS, description="Your labels: " + tags.RULE + " Lists filter on them with `?tag=`."),
    AfterValidator(_tags),
]


def _aware(value: Any) -> datetime:
    """RFC 3339 with an explicit offset: a moment sent (a proof's window, an extension's `until`) must not depend on
    the server's time zone."""
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        refuse("Give an RFC 3339 time with its offset, e.g. 2026-01-01T12:00:00Z.")
    moment = digests.utc_or_none(parsed)
    if moment is None:
        # 0001-01-01T00:00:00+01:00 is a valid RFC 3339 time whose UTC instant falls before year 1.
        refuse("The time falls outside years 1 to 9999 in UTC.")
    return moment


# A moment, in UTC: a time with its offset, within years 1 to 9999 once in UTC.
AwareTime = Annotated[datetime, PlainValidator(_aware), WithJsonSchema({"type": "string", "format": "date-time"})]


@dataclass(frozen=True)
class OneOf:
    """`Annotated[str, OneOf(values)]`: one of `values` (a model's choices, a list of event types)."""

    values: tuple[str, ...]

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.literal_schema(list(self.values))


def _object(value: Any) -> Any:
    if type(value) is not dict:
        raise PydanticCustomError("object", "Expected a JSON object.")
    return value


# Any JSON object, taken as parsed.
JSONObject = Annotated[dict[str, Any], BeforeValidator(_object)]


def _not_null(value: Any) -> Any:
    if value is None:
        raise PydanticCustomError("null", "This field may not be null.")
    return value


# Any JSON value but null, taken as parsed.
NotNull = Annotated[Any, AfterValidator(_not_null)]


# -- the refusals, as problem+json `errors` -----------------------------------------------------

WORDS = {
    "extra_forbidden": "Unknown field.",
    "missing": "This field is required.",
    "string_too_short": "This field may not be blank.",
}
# The errors of an object that is not one: named `non_field_errors` inside it, as for the body itself.
NOT_AN_OBJECT = {"model_type", "model_attributes_type", "dict_type"}


def field_errors(exc: ValidationError) -> dict[str, Any]:
    """The body's refusals as `errors`: each field path (`pending` > `0` > `arguments`) to its messages.

    An object with unknown keys is refused for them alone: its other fields are not reported.
    """
    errors = exc.errors(include_url=False)
    unknown = {error["loc"][:-1] for error in errors if error["type"] == "extra_forbidden"}
    tree: dict[str, Any] = {}
    for error in errors:
        loc = error["loc"]
        if error["type"] != "extra_forbidden" and any(loc[: len(place)] == place for place in unknown):
            continue
        at = [str(step) for step in (*loc, *error.get("ctx", {}).get("at", ()))]
        message = WORDS.get(error["type"], error["msg"])
        if error["type"] in NOT_AN_OBJECT:
            message = "This field may not be null." if error["input"] is None else "Expected a JSON object."
            if error["input"] is not None or not at:
                at.append("non_field_errors")
        elif not at:
            at.append("non_field_errors")
        _put(tree, at, message)
    return tree


def _put(tree: dict[str, Any], at: list[str], message: str) -> None:
    node = tree
    for step in at[:-1]:
        child = node.setdefault(step, {})
        if isinstance(child, list):  # messages here and below: the ones here move under non_field_errors
            child = node[step] = {"non_field_errors": child}
        node = child
    leaf = node.setdefault(at[-1], [])
    if isinstance(leaf, dict):
        leaf = leaf.setdefault("non_field_errors", [])
    leaf.append(message)


# -- the JSON Schema, in OpenAPI 3.0's dialect -------------------------------------------------


class OpenAPI30Dialect(GenerateJsonSchema):
    """pydantic's JSON Schema as OpenAPI 3.0 reads it: `nullable` for `T | None`, `enum` for a constant, no titles
    (the component's name says it). The answers' schemas use it as it is (api/schema.py, AnswerSchemas)."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        if "$ref" in inner:  # OpenAPI 3.0 ignores the siblings of a $ref
            return {"allOf": [inner], "nullable": True}
        return {**inner, "nullable": True}

    def literal_schema(self, schema: core_schema.LiteralSchema) -> JsonSchemaValue:
        value = super().literal_schema(schema)
        if "const" in value:
            value["enum"] = [value.pop("const")]
        return value

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        value = super().model_schema(schema)
        value.pop("title", None)
        return value


class OpenAPI30(OpenAPI30Dialect):
    """The requests' dialect: each model a component named `...Request` like DRF's (COMPONENT_SPLIT_REQUEST),
    referred to as `#/components/schemas/<name>`."""

    suffix = "Request"

    def generate(self, schema: Any, mode: Any = "validation") -> JsonSchemaValue:
        value = super().generate(schema, mode)
        value.pop("title", None)
        names = {name: name + self.suffix for name in value.get("$defs", {})}
        return _renamed(value, names)  # type: ignore[no-any-return]


def _renamed(node: Any, names: dict[str, str]) -> Any:
    """`node` with each definition and each `$ref` to it under its new name."""
    if isinstance(node, list):
        return [_renamed(item, names) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _renamed(value, names) for key, value in node.items()}
    if "$defs" in out:
        out["$defs"] = {names[name]: {k: v for k, v in d.items() if k != "title"} for name, d in out["$defs"].items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        out["$ref"] = "#/components/schemas/" + names[ref.removeprefix("#/$defs/")]
    return out
