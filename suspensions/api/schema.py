"""OpenAPI post-processing: what drf-spectacular cannot infer from the views.

- The request bodies (suspensions/wire): each model's JSON Schema, as the
  request validates it, in OpenAPI 3.0's dialect (`RequestBodies`).
- The tags in the order the docs show them; each operation's own words,
  examples and problem+json answers come from `docs.operation` on its view.
- The headers of a 401 (the Bearer challenge) and a 503 (Retry-After).
- Optional query filters ignore an empty value (django-filter's behaviour,
  which the console's GET forms rely on): `allowEmptyValue` says so.
- The keyed creates (`@idempotent`, api/idempotency.py, which documents the
  header): their `400` for a bad key, `409 idempotency_mismatch` and the
  `Idempotent-Replayed` header of a replayed answer.
- The bearer token and staff session schemes, and the answer bodies' schemas
  (`AnswerSchemas`: suspensions/wire, pydantic models), imported in
  SuspensionsConfig.ready so they are registered before any schema is generated.
"""

from typing import Any

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.contrib.pydantic import PydanticExtension
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent
from pydantic.json_schema import model_json_schema

from .. import exceptions
from ..wire.base import OpenAPI30, OpenAPI30Dialect
from . import docs
from .docs import samples
from .idempotency import HEADER, REPLAYED


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "suspensions.api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "An API token (`sus_...`), shown once at creation."}


class StaffSessionScheme(SessionScheme):
    """The console's session cookie (active staff users only), described like DRF's own session scheme."""

    target_class = "suspensions.api.authentication.StaffSessionAuthentication"


class RequestBodies(OpenApiSerializerExtension):
    """A request body (suspensions/wire): its model's JSON Schema, as the request validates it, in OpenAPI 3.0's
    dialect; each model it holds becomes a component of its own."""

    target_class = "suspensions.wire.base.Body"
    match_subclasses = True
    priority = 1  # before drf-spectacular's own pydantic support, which documents the serialized form

    def get_name(self, auto_schema: Any, direction: Any) -> str:
        return str(self.target.__name__)

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = self.target.model_json_schema(schema_generator=OpenAPI30, mode="validation")
        for name, definition in schema.pop("$defs", {}).items():
            component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=definition)
            auto_schema.registry.register_on_missing(component)
        return schema  # type: ignore[no-any-return]


class AnswerSchemas(PydanticExtension):
    """The answer bodies (suspensions/wire): each pydantic model, and each model it holds, a component of its name,
    in OpenAPI 3.0's words (drf-spectacular's own pydantic support, with the generator above)."""

    priority = 1

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        ref = "#/components/schemas/{model}"
        schema = model_json_schema(
            self.target, ref_template=ref, mode="serialization", schema_generator=OpenAPI30Dialect
        )
        for name, sub in schema.pop("$defs", {}).items():
            component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=lone_refs(sub))
            auto_schema.registry.register_on_missing(component)
        return lone_refs(schema)


def lone_refs(node: Any) -> Any:
    """A $ref with a description beside it as `allOf: [$ref]`: OpenAPI 3.0 ignores the siblings of a $ref."""
    if isinstance(node, list):
        return [lone_refs(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: lone_refs(value) for key, value in node.items()}
    if "$ref" in out and len(out) > 1:
        return {"allOf": [{"$ref": out.pop("$ref")}], **out}
    return out


METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}
HEADERS = {
    "401": {"WWW-Authenticate": {"schema": {"type": "string"}, "description": 'Bearer realm="api"'}},
    "429": {"Retry-After": {"schema": {"type": "integer"}, "required": True, "description": "Seconds to wait."}},
    "503": {"Retry-After": {"schema": {"type": "integer"}, "required": True, "description": "Seconds to wait."}},
}


def problem_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry."""
    result["tags"] = docs.TAGS
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            if any(p.get("in") == "header" and p.get("name") == HEADER for p in operation.get("parameters", [])):
                keyed(operation["responses"])
            for status, headers in HEADERS.items():
                if status in operation["responses"]:
                    operation["responses"][status]["headers"] = headers
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and not parameter.get("required"):
                    parameter["allowEmptyValue"] = True
    return result


# The refusals of a keyed create, beside the operation's own (docs.operation).
KEYED_REFUSALS: dict[int, tuple[type[exceptions.ServiceError], str, str, str]] = {
    400: (
        exceptions.InvalidRequest,
        "BadIdempotencyKey",
        "a bad Idempotency-Key",
        "The Idempotency-Key header is not valid.",
    ),
    409: (
        exceptions.IdempotencyMismatch,
        "KeyOfAnotherRequest",
        "a key used for another request",
        "this Idempotency-Key was first sent with another request (POST /api/v1/runs, another body or path); "
        "use a new key for a new request",
    ),
    429: (
        exceptions.Throttled,
        "TooManyKeys",
        "a new key past the principal's allowance",
        "this principal holds 10000 idempotency keys younger than 24 hours (IDEMPOTENCY_KEYS_PER_PRINCIPAL); "
        "a new key is refused until the oldest one expires",
    ),
}


def keyed(responses: dict[str, Any]) -> None:
    """Add a keyed create's refusals and the replay header to an operation's answers."""
    for status, (error, name, summary, detail) in KEYED_REFUSALS.items():
        answer = responses.setdefault(
            str(status),
            {"content": {docs.PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}, "description": ""},
        )
        line = f"- `{error.code}`: {docs.meaning(error.code)}"
        if line not in answer["description"]:
            answer["description"] = "\n".join(filter(None, [answer["description"], line]))
        example = samples.problem(status, error.code, error.title, detail)
        answer["content"][docs.PROBLEM_JSON].setdefault("examples", {})[name] = {
            "value": example,
            "summary": summary,
        }
    for code, answer in responses.items():
        if code.startswith("2"):
            answer.setdefault("headers", {})[REPLAYED] = {
                "schema": {"type": "string", "enum": ["true"]},
                "description": "Present on a replay: this is the first answer to the same key and request.",
            }
