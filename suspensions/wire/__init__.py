"""The wire: each request and answer body declared once (docs/decisions.md, "One declaration per shape").

requests*.py hold the request bodies: pydantic models that validate a body,
write its refusals as problem+json `errors` and are its OpenAPI schema;
base.py holds what they share (the config, the field types, the errors).
"""

from .base import Body, field_errors

__all__ = ["Body", "field_errors"]
