"""OpenAPI post-processing: what drf-spectacular cannot infer from the views.

- Every operation can answer the problem+json errors the exception handler
  renders for any view (400 malformed input, 401, 403, 404, 503 with
  Retry-After); each error response gets the Problem body and media type.
- Optional query filters ignore an empty value (django-filter's behaviour,
  which the console's GET forms rely on): `allowEmptyValue` says so.
- The bearer token and staff session schemes (imported in SuspensionsConfig.ready so they are
  registered before any schema is generated).
"""

from typing import Any

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "suspensions.api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "An API token (`sus_...`), shown once at creation."}


class StaffSessionScheme(SessionScheme):
    """The console's session cookie (active staff users only), described like DRF's own session scheme."""

    target_class = "suspensions.api.authentication.StaffSessionAuthentication"


PROBLEM = {
    "type": "object",
    "description": "RFC 9457 problem details; `code` is one of the stable codes of DESIGN §10.",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "errors": {"type": "object", "additionalProperties": True},
    },
    "additionalProperties": True,
}
ANY_VIEW_MAY_ANSWER = {
    "400": "invalid_request",
    "401": "unauthenticated",
    "403": "forbidden (or a reason-specific refusal)",
    "404": "not_found (also outside the caller's scope)",
    "503": "unavailable: the database is down; retry after Retry-After seconds",
}
METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}


def problem_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry."""
    result.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM
    body = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            responses = operation.setdefault("responses", {})
            for status, description in ANY_VIEW_MAY_ANSWER.items():
                responses.setdefault(status, {"description": description})
            for status, response in responses.items():
                if status[0] in "45":
                    response["content"] = body
            responses["503"]["headers"] = {"Retry-After": {"schema": {"type": "integer"}, "required": True}}
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and not parameter.get("required"):
                    parameter["allowEmptyValue"] = True
    return result
