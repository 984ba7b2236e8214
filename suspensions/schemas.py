"""A call's `arguments_schema`, self-contained by construction (docs/policies.md, "What a schema may contain";
docs/decisions.md, "Trust boundaries"; issue 32).

A schema comes from the engine and is applied again when an approver edits
the arguments, so applying it must never reach outside it or run unbounded:

- **Nothing is fetched.** The validator's registry holds the schema alone and
  its `retrieve` refuses every URI: a `$ref` to a file, a URL or any other
  document is unresolvable, never read. Every `$ref` must be a fragment
  (`#...`) of the schema itself, checked over the whole schema when it is
  stored, branches the arguments never reach included.
- **Every reference lands on a schema** (an object or a boolean), and no chain
  of in-place keywords (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`,
  `then`, `else`, `dependentSchemas`) leads back to where it started: that
  would apply a schema to the same value for ever.
- **Bounded size and nesting**, and **patterns in linear time**: `pattern`,
  `patternProperties` and `additionalProperties`' use of them run on RE2,
  which has no backtracking; a pattern RE2 cannot take (backreferences,
  lookaround) is refused. jsonschema's `unevaluatedProperties` matches
  `patternProperties` with Python's backtracking `re`, so the two are not
  accepted together.
- **Bounded work.** Each keyword applied spends a step of a budget shared by
  every validation of one request (MAX_STEPS, with MAX_SECONDS as a
  backstop); past it the validation stops with `TooCostly`, a refusal.
  `uniqueItems` runs in linear time (jsonschema's compares every pair of
  objects).
"""

import contextvars
import json
import time
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import re2
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012

MAX_SCHEMA_BYTES = 64 * 1024
MAX_SCHEMA_DEPTH = 32
# Keyword applications per validation. A schema of the documented size on arguments within
# their bounds stays well under it (docs/policies.md); an exponential fan-out of `$ref`s does not.
MAX_STEPS = 20_000
MAX_SECONDS = 0.5
DRAFT_URI = "https://json-schema.org/draft/2020-12/schema"
# Keywords that apply a subschema to the same value (no step down into the instance).
IN_PLACE_ONE = ("not", "if", "then", "else")
IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")


class SchemaUnusable(Exception):
    """The schema cannot be a call's arguments_schema; the message says why."""


class TooCostly(SchemaUnusable):
    """Validating took more than MAX_STEPS keyword applications."""


def _refuse(uri: str) -> Resource[Any]:
    # The registry's only way to reach outside the schema: closed. (NoSuchResource is an attrs class
    # whose fields mypy does not see.)
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


def registry_of(schema: dict[str, Any]) -> tuple[Registry[Any], str]:
    """A registry holding `schema` alone (under its `$id`, if any) and that retrieves nothing; and that id."""
    resource = DRAFT202012.create_resource(schema)
    root = resource.id() or ""
    return Registry(retrieve=_refuse).with_resource(root, resource), root  # type: ignore[call-arg]


# --- patterns on RE2 ---------------------------------------------------------------------------

_OPTIONS = re2.Options()
# A refused pattern is the caller's error, answered as such: not a line on the server's stderr.
_OPTIONS.log_errors = False


@lru_cache(maxsize=512)
def compiled(pattern: str) -> Any:
    """`pattern` compiled by RE2 (linear-time matching); re2.error when RE2 cannot take it."""
    return re2.compile(pattern, _OPTIONS)


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not compiled(patrn).search(instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if compiled(pattern).search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's additionalProperties, with patternProperties matched by RE2; the same messages."""
    if not validator.is_type(instance, "object"):
        return
    known, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = {k for k in instance if k not in known and not any(compiled(p).search(k) for p in patterns)}
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        joined = ", ".join(repr(each) for each in sorted(extras))
        if patterns:
            verb, regexes = ("does" if len(extras) == 1 else "do"), ", ".join(map(repr, sorted(patterns)))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} unexpected)")


# --- the work budget ---------------------------------------------------------------------------


class Budget:
    """What validation may still spend: keyword applications, and a deadline set when the first one runs."""

    def __init__(self, steps: int = MAX_STEPS, seconds: float = MAX_SECONDS) -> None:
        self.steps, self.seconds, self.deadline = steps, seconds, 0.0

    def spend(self) -> None:
        now = time.monotonic()
        self.deadline = self.deadline or now + self.seconds
        self.steps -= 1
        # Steps decide (the same schema and value always get the same answer); the clock is the backstop.
        if self.steps < 0 or now > self.deadline:
            raise TooCostly(f"validating against this schema takes more than {MAX_STEPS:,} steps or {MAX_SECONDS} s")


# One budget per request (reset by `new_request_budget` when a request starts), else one per validation.
_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("schema_budget", default=None)
_running: contextvars.ContextVar[Budget] = contextvars.ContextVar("schema_running")


def new_request_budget(**_: Any) -> None:
    """request_started: every schema validation of this request shares one budget."""
    _budget.set(Budget())


def end_request_budget(**_: Any) -> None:
    """request_finished: what runs next in this thread (a task, a shell) budgets each validation alone."""
    _budget.set(None)


def _counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """`keyword`, spending one step of the running validation's budget each time it is applied."""

    def apply(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _running.get().spend()
        return keyword(validator, value, instance, schema)

    return apply


def _unique_key(value: Any) -> Any:
    """A hashable stand-in for a JSON value, equal where JSON Schema says equal (1 == 1.0, true != 1)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, dict):
        return ("object", frozenset((k, _unique_key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("array", tuple(_unique_key(v) for v in value))
    return ("string" if isinstance(value, str) else "number", value)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """jsonschema's uniqueItems in linear time (its fallback compares every pair of objects)."""
    if unique and validator.is_type(instance, "array"):
        keys = [_unique_key(item) for item in instance]
        if len(set(keys)) != len(keys):
            yield ValidationError(f"{instance!r} has non-unique elements")


_KEYWORDS = {
    **Draft202012Validator.VALIDATORS,
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}
Validator = validators.extend(Draft202012Validator, validators={name: _counted(fn) for name, fn in _KEYWORDS.items()})


def errors(schema: dict[str, Any], instance: Any) -> list[ValidationError]:
    """Every way `instance` breaks `schema` (one `problem` accepts), within the request's budget.

    Raises SchemaUnusable (TooCostly past the budget) rather than anything
    else the schema could make jsonschema raise.
    """
    registry, _ = registry_of(schema)
    token = _running.set(_budget.get() or Budget())
    try:
        return list(Validator(schema, registry=registry).iter_errors(instance))
    except (Unresolvable, RecursionError, re2.error, SchemaError) as exc:
        raise SchemaUnusable(f"The schema cannot be applied: {type(exc).__name__}.") from None
    finally:
        _running.reset(token)


# --- the checks when a schema is stored --------------------------------------------------------


def problem(schema: Any) -> str | None:
    """Why `schema` cannot be a call's arguments_schema, or None. Never fetches, never raises for the schema."""
    if not isinstance(schema, dict):
        return "Must be a JSON Schema object."
    size = len(json.dumps(schema, separators=(",", ":")))
    if size > MAX_SCHEMA_BYTES:
        return f"The schema is {size:,} bytes as JSON; at most {MAX_SCHEMA_BYTES:,} are accepted."
    if _depth(schema) > MAX_SCHEMA_DEPTH:
        return f"The schema nests deeper than {MAX_SCHEMA_DEPTH} levels."
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"Not a valid JSON Schema (draft 2020-12): {exc.message}"
    except RecursionError:
        return "Not a valid JSON Schema (draft 2020-12): it cannot be checked."
    try:
        edges = _walk(schema)
    except SchemaUnusable as exc:
        return str(exc)
    return _cycle(edges)


def _depth(value: Any) -> int:
    """How deeply objects and arrays nest in `value` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _walk(schema: dict[str, Any]) -> dict[int, list[Any]]:
    """Check every subschema the validator could ever apply; return the in-place edges between them.

    The walk follows the keywords that hold subschemas and every `$ref`'s
    target, so a subschema reachable only through a reference (under
    `definitions`, say) is checked too. Raises SchemaUnusable.
    """
    registry, root = registry_of(schema)
    resolver = registry.resolver(base_uri=root)
    edges: dict[int, list[Any]] = {}
    seen: set[int] = set()
    keywords: set[str] = set()
    todo: list[Any] = [schema]
    while todo:
        node = todo.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        keywords.update(node)
        _check_node(node, node is schema)
        targets = [_target(resolver, node[k]) for k in ("$ref", "$dynamicRef") if k in node]
        edges[id(node)] = targets + _in_place(node)
        todo += targets
        todo += DRAFT202012.subresources_of(node)
    if {"unevaluatedProperties", "patternProperties"} <= keywords:
        raise SchemaUnusable("unevaluatedProperties and patternProperties cannot be used together in one schema.")
    return edges


def _check_node(node: dict[str, Any], is_root: bool) -> None:
    if "$schema" in node and node["$schema"] not in (DRAFT_URI, DRAFT_URI + "#"):
        raise SchemaUnusable(f"Only JSON Schema draft 2020-12 is accepted ($schema {DRAFT_URI}).")
    if "$id" in node and not is_root:
        raise SchemaUnusable("$id is accepted only at the schema's root: the schema is one document.")
    for pattern in [node["pattern"]] if isinstance(node.get("pattern"), str) else []:
        _check_pattern(pattern)
    for pattern in node.get("patternProperties", {}) if isinstance(node.get("patternProperties"), dict) else ():
        _check_pattern(pattern)


def _check_pattern(pattern: str) -> None:
    try:
        compiled(pattern)
    except re2.error as exc:
        detail = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise SchemaUnusable(
            f"The pattern {pattern[:100]!r} is not accepted ({detail}): patterns run on a linear-time engine,"
            " without backreferences or lookaround."
        ) from None


def _target(resolver: Any, ref: Any) -> Any:
    """What a local `$ref` points at; SchemaUnusable when it leaves the schema, is missing, or is no schema."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise SchemaUnusable(f"$ref {str(ref)[:200]!r} refers outside the schema: only #... references are accepted.")
    try:
        contents = resolver.lookup(ref).contents
    # TypeError: a pointer that walks into a boolean or a number (`#/$defs/a/b` where `a` is `true`).
    except (Unresolvable, LookupError, ValueError, TypeError):
        raise SchemaUnusable(f"$ref {ref[:200]!r} refers to something the schema does not contain.") from None
    if not isinstance(contents, dict | bool):
        raise SchemaUnusable(f"$ref {ref[:200]!r} refers to a {type(contents).__name__}, not to a schema.")
    return contents


def _in_place(node: dict[str, Any]) -> list[Any]:
    """The subschemas `node` applies to the same value (its `$ref` aside)."""
    found = [node[k] for k in IN_PLACE_ONE if k in node]
    for key in IN_PLACE_MANY:
        found += node.get(key, []) if isinstance(node.get(key), list) else []
    dependent = node.get("dependentSchemas")
    return found + (list(dependent.values()) if isinstance(dependent, dict) else [])


def _cycle(edges: dict[int, list[Any]]) -> str | None:
    """A message when some chain of in-place keywords comes back to a subschema it started from."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in edges:
        if state.get(start):
            continue
        stack: list[tuple[int, Iterator[Any]]] = [(start, iter(edges[start]))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next((c for c in children if isinstance(c, dict)), None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(id(child)) == 1:
                return "The schema refers to itself without stepping into the value ($ref loop): it cannot be applied."
            elif not state.get(id(child)):
                state[id(child)] = 1
                stack.append((id(child), iter(edges.get(id(child), []))))
    return None
