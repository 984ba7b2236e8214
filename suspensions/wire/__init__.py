"""The wire: each request and answer body declared once (docs/decisions.md, "One declaration per shape").

requests*.py hold the request bodies: pydantic models that validate a body,
write its refusals as problem+json `errors` and are its OpenAPI schema;
answers*.py hold the answer bodies: pydantic models whose `of(...)` builds the
answer from what a service returned, whose dump is the JSON the API writes,
and whose JSON Schema drf-spectacular puts in the OpenAPI document;
base.py holds what the requests share (the config, the field types, the errors).
"""

from .base import Body, field_errors

__all__ = ["Body", "field_errors"]
