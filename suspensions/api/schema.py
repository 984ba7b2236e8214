"""OpenAPI post-processing: what drf-spectacular cannot infer from the views.

- The tags in the order the docs show them, and help for request fields the
  docs package describes (api/docs); each operation's own words, examples and
  problem+json answers come from `docs.operation` on its view.
- The headers of a 401 (the Bearer challenge) and a 503 (Retry-After).
- Optional query filters ignore an empty value (django-filter's behaviour,
  which the console's GET forms rely on): `allowEmptyValue` says so.
- The bearer token and staff session schemes (imported in SuspensionsConfig.ready so they are
  registered before any schema is generated).
"""

from typing import Any

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension

from . import docs


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "suspensions.api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "An API token (`sus_...`), shown once at creation."}


class StaffSessionScheme(SessionScheme):
    """The console's session cookie (active staff users only), described like DRF's own session scheme."""

    target_class = "suspensions.api.authentication.StaffSessionAuthentication"


METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}
HEADERS = {
    "401": {"WWW-Authenticate": {"schema": {"type": "string"}, "description": 'Bearer realm="api"'}},
    "503": {"Retry-After": {"schema": {"type": "integer"}, "required": True, "description": "Seconds to wait."}},
}


def problem_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry."""
    result["tags"] = docs.TAGS
    schemas = result.get("components", {}).get("schemas", {})
    for name, fields in docs.FIELD_HELP.items():
        properties = schemas.get(name, {}).get("properties", {})
        for field, text in fields.items():
            if field not in properties or "description" in properties[field]:
                continue
            if "$ref" in properties[field]:  # OpenAPI 3.0 ignores the siblings of a $ref
                properties[field] = {"allOf": [properties[field]]}
            properties[field]["description"] = text
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            for status, headers in HEADERS.items():
                if status in operation["responses"]:
                    operation["responses"][status]["headers"] = headers
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and not parameter.get("required"):
                    parameter["allowEmptyValue"] = True
    return result
