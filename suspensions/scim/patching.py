"""SCIM PATCH (RFC 7644, section 3.5.2) applied to a resource's attributes in memory (docs/identity.md,
"Provisioning (SCIM) and leavers").

The operations change a copy of the resource as SCIM shows it; the result is
validated as a whole (wire/scim.py) and only then written, so a request with
one bad operation writes nothing. Paths are the forms providers send:
`active`, `name.givenName`, `emails[type eq "work"].value`, `members`,
`members[value eq "<id>"]`, or no path with an object of attributes (Okta's
`{"op": "replace", "value": {"active": false}}`). Attribute names are matched
without regard to case, as RFC 7643 says; an attribute this service does not
keep (a title, the enterprise extension) is ignored, as in a POST.
"""

import copy
import re
from dataclasses import dataclass
from typing import Any

from django_scim.exceptions import BadRequestError

CORE = ("urn:ietf:params:scim:schemas:core:2.0:user:", "urn:ietf:params:scim:schemas:core:2.0:group:")
PATH = re.compile(
    r"""(?P<attr>[A-Za-z][\w$-]*)
        (?:\[\s*(?P<key>[A-Za-z][\w]*)\s+eq\s+(?:"(?P<text>(?:[^"\\]|\\.)*)"|(?P<flag>true|false))\s*\])?
        (?:\.(?P<sub>[A-Za-z][\w]*))?""",
    re.VERBOSE | re.IGNORECASE,
)
State = dict[str, Any]


@dataclass(frozen=True)
class Path:
    attr: str  # lower case
    sub: str | None = None  # lower case
    key: str | None = None  # the filter's attribute, lower case: members[value eq "x"] -> "value"
    match: Any = None  # the filter's value: "x", or True/False


def parse(text: str) -> Path | None:
    """The path's parts; None for an attribute of another schema (an extension), which is ignored."""
    lowered = text.lower()
    for urn in CORE:
        if lowered.startswith(urn):
            text = text[len(urn) :]
            break
    else:
        if lowered.startswith("urn:"):
            return None
    found = PATH.fullmatch(text.strip())
    if found is None:
        raise BadRequestError(
            f"path {text[:100]!r} is not an attribute path this service reads", scim_type="invalidPath"
        )
    flag = found["flag"]
    match = found["text"] if flag is None else flag.lower() == "true"
    key = found["key"].lower() if found["key"] else None
    return Path(found["attr"].lower(), found["sub"].lower() if found["sub"] else None, key, match)


def apply(state: State, operations: list[Any], kinds: dict[str, Any]) -> State:
    """The resource after `operations`, on a copy; `kinds` maps an attribute to its handler. Raises BadRequestError."""
    changed = copy.deepcopy(state)
    for operation in operations:
        op = operation.op.lower()
        if operation.path is None:
            if not isinstance(operation.value, dict):
                raise BadRequestError("an operation without a path needs an object of attributes", scim_type="noTarget")
            for name, value in operation.value.items():
                _one(changed, op, parse(str(name)), value, kinds)
        else:
            _one(changed, op, parse(operation.path), operation.value, kinds)
    return changed


def _one(state: State, op: str, path: Path | None, value: Any, kinds: dict[str, Any]) -> None:
    if path is None or path.attr not in kinds:
        return  # an attribute this service does not keep
    if op == "remove" and value is None and path.attr in ("username", "displayname", "active"):
        raise BadRequestError(f"{path.attr} cannot be removed", scim_type="mutability")
    kinds[path.attr](state, op, path, value)


def simple(name: str) -> Any:
    """A single-valued attribute stored under `name` (remove clears it to its empty value)."""

    def handle(state: State, op: str, path: Path, value: Any) -> None:
        state[name] = "" if op == "remove" else value

    return handle


def name_part(state: State, op: str, path: Path, value: Any) -> None:
    """`name.givenName`, `name.familyName`, or `name` with an object of them."""
    parts = {"givenname": "givenName", "familyname": "familyName"}
    name = state.setdefault("name", {})
    if path.sub is None:
        if op == "remove":
            state["name"] = {}
        elif isinstance(value, dict):
            state["name"] = value if op == "replace" else {**name, **value}
        else:
            raise BadRequestError("name must be an object", scim_type="invalidValue")
    elif path.sub in parts:
        name[parts[path.sub]] = "" if op == "remove" else value


def emails(state: State, op: str, path: Path, value: Any) -> None:
    """`emails`, or one of them picked by a filter (`emails[type eq "work"].value`)."""
    if path.key is None:
        given = [] if op == "remove" else _listed(value, "emails")
        state["emails"] = given if op in ("replace", "remove") else [*state.get("emails", []), *given]
        return
    matching = [e for e in state.get("emails", []) if isinstance(e, dict) and _matches(e, path)]
    if op == "remove":
        state["emails"] = [e for e in state.get("emails", []) if e not in matching]
        return
    entry = value if path.sub is None else {path.sub: value}
    if not isinstance(entry, dict):
        raise BadRequestError("an email must be an object", scim_type="invalidValue")
    if matching:
        matching[0].update(entry)
    else:
        state.setdefault("emails", []).append({path.key: path.match, **entry})


def members(state: State, op: str, path: Path, value: Any) -> None:
    """`members`: add, replace or remove a list of `{value}`; `members[value eq "<id>"]` removes that one."""
    current = [m for m in state.get("members", []) if isinstance(m, dict)]
    if path.key is not None:
        if op != "remove" or path.key != "value":
            raise BadRequestError("members[value eq ...] may only be removed", scim_type="invalidPath")
        state["members"] = [m for m in current if m.get("value") != path.match]
        return
    if op == "remove":
        gone = {m.get("value") for m in _listed(value, "members")} if value is not None else None
        state["members"] = [m for m in current if gone is not None and m.get("value") not in gone]
        return
    given = _listed(value, "members")
    state["members"] = given if op == "replace" else current + [m for m in given if m not in current]


def _listed(value: Any, attr: str) -> list[Any]:
    value = [value] if isinstance(value, dict) else value
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise BadRequestError(f"{attr} must be a list of objects", scim_type="invalidValue")
    return value


def _matches(entry: dict[str, Any], path: Path) -> bool:
    found = {k.lower(): v for k, v in entry.items()}.get(path.key or "")
    return found == path.match or (
        isinstance(found, str) and isinstance(path.match, str) and found.lower() == path.match.lower()
    )


USER = {
    "username": simple("userName"),
    "active": simple("active"),
    "externalid": simple("externalId"),
    "name": name_part,
    "emails": emails,
}
GROUP = {
    "displayname": simple("displayName"),
    "externalid": simple("externalId"),
    "members": members,
}
