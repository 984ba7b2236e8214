"""The wire: each request and answer body declared once (docs/decisions.md, "One declaration per shape").

answers.py holds the answer bodies: pydantic models whose `of(...)` builds the
answer from what a service returned, whose dump is the JSON the API writes,
and whose JSON Schema drf-spectacular puts in the OpenAPI document.
"""
