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
- The waits (api/waits.py): Django async views, which drf-spectacular does
  not list (it reads DRF views only); `long_lived_endpoints` lists them,
  each documented by a class that holds only its schema.
- The bearer token and staff session schemes, and the answer bodies' schemas
  (`AnswerSchemas`: suspensions/wire, pydantic models), imported in
  SuspensionsConfig.ready so they are registered before any schema is generated.
"""

from typing import Any, NoReturn

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.contrib.pydantic import PydanticExtension
from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from pydantic.json_schema import model_json_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from .. import exceptions
from ..strictjson import MAX_SAFE_INTEGER
from ..wire.answers import EventOut, RunOut
from ..wire.base import OpenAPI30, OpenAPI30Dialect
from . import docs, waits
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


# -- the waits ----------------------------------------------------------------------------------


SSE = "text/event-stream"


def _whole(name: str, description: str, high: int = MAX_SAFE_INTEGER, **options: Any) -> OpenApiParameter:
    schema = {"type": "integer", "minimum": 0, "maximum": high}
    return OpenApiParameter(name, {**schema, **options}, description=description)  # type: ignore[arg-type]


def _served_elsewhere(*args: Any) -> NoReturn:
    raise NotImplementedError("api/waits.py serves this path; this class only documents it")


def never_forbidden(operation: dict[str, Any]) -> dict[str, Any]:
    """An operation without the 403 every other one has: a wait refuses a console session without staff access
    as unauthenticated (401), and has no role to miss."""
    responses = {key: answer for key, answer in operation["responses"].items() if key != (403, docs.PROBLEM_JSON)}
    return {**operation, "responses": responses}


class RunWaitSchema(APIView):
    """`GET /runs/{id}/wait` as the schema shows it; api/waits.run_wait serves it."""

    @extend_schema(
        parameters=[
            _whole("after_revision", "Answer once the run's revision passes this one. Default: its revision now."),
            _whole(
                "timeout",
                f"Seconds to wait at most, 0 to {waits.WAIT_MAX_SECONDS}.",
                waits.WAIT_MAX_SECONDS,
                default=waits.WAIT_DEFAULT_SECONDS,
            ),
        ],
        **never_forbidden(docs.operation("wait_run", ok={200: RunOut})),
    )
    def get(self, request: Request, pk: str) -> NoReturn:
        _served_elsewhere()


class EventStreamSchema(APIView):
    """`GET /events/stream` as the schema shows it; api/waits.event_stream serves it."""

    @extend_schema(
        parameters=[
            OpenApiParameter("scope", str, description="Only this scope and those below it; one you hold a role in."),
            _whole("last_event_id", "Start after this event id (as the `Last-Event-ID` header)."),
            OpenApiParameter(
                "Last-Event-ID",
                {"type": "integer", "minimum": 0},  # type: ignore[arg-type]
                OpenApiParameter.HEADER,
                description="The id of the last message seen: the stream resumes after it (browsers send it).",
            ),
        ],
        **docs.operation(
            "stream_events",
            ok={(200, SSE): OpenApiResponse(EventOut, description="Server-Sent Events; each message's `data`.")},
        ),
    )
    def get(self, request: Request) -> NoReturn:
        _served_elsewhere()


# (path, route, view): as drf-spectacular lists the DRF views of api/urls.py.
LONG_LIVED = [
    ("/api/v1/runs/{pk}/wait", "api/v1/runs/<uuid:pk>/wait", RunWaitSchema.as_view()),
    ("/api/v1/events/stream", "api/v1/events/stream", EventStreamSchema.as_view()),
]


def long_lived_endpoints(endpoints: list[Any]) -> list[Any]:
    """drf-spectacular PREPROCESSING_HOOKS entry: the waits beside the DRF views."""
    return [*endpoints, *((path, route, "GET", view) for path, route, view in LONG_LIVED)]
