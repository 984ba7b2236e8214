"""Scopes (docs/api.md, "1. Words"): `workspace[/project[/team]]`.

A row stores its scope and each of its prefixes in its own column
(`scope_l1`, `scope_l2`, `scope_l3`), so "visible to a principal holding
scope S of depth d" is the indexed equality `scope_l<d> = S`.
"""

import re

SEGMENT = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
MAX_DEPTH = 3


def is_valid(scope: str) -> bool:
    if not isinstance(scope, str):
        return False
    parts = scope.split("/")
    return 1 <= len(parts) <= MAX_DEPTH and all(SEGMENT.fullmatch(p) for p in parts)


def depth(scope: str) -> int:
    return scope.count("/") + 1


def levels(scope: str) -> dict[str, str]:
    """The prefix columns of a row in `scope` (empty where the scope is shallower)."""
    parts = scope.split("/")
    return {f"scope_l{i}": "/".join(parts[:i]) if i <= len(parts) else "" for i in range(1, MAX_DEPTH + 1)}


def covers(holder: str, scope: str) -> bool:
    """True when a principal holding `holder` may see rows stamped `scope`."""
    return scope == holder or scope.startswith(holder + "/")


def parent(scope: str) -> str:
    """The scope one level up (`acme/support` -> `acme`); a top-level scope is its own (escalation:
    docs/policies.md, "What happens at the deadline")."""
    return scope.rsplit("/", 1)[0] if "/" in scope else scope


def path(scope: str) -> list[str]:
    """The scope and every scope above it, top first (`acme/eu/ops` -> acme, acme/eu, acme/eu/ops)."""
    parts = scope.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
