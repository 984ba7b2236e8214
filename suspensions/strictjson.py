"""The one reader of client JSON (docs/api.md, "5. Digests and bounds"): request bodies and the JSON held in strings.

The body parser and the string fields (`arguments`, `input`, ...) both call
`loads`, so what one refuses the other cannot accept. Every refusal is a
`StrictJSONError` whose message is safe to show the client. `loads` only
validates: a caller that retains a text keeps the text it was given, never a
re-encoding of the value returned here.
"""

import json
import math
import sys
from typing import Any

# Encoders, digests and serializers recurse once per level; past this a value
# would end as a RecursionError (a 500) somewhere further down.
MAX_NESTING = 200
# docs/api.md, "5. Digests and bounds": counters stay within what every JSON reader (a double) holds exactly.
MAX_SAFE_INTEGER = 2**53
_MAX_DOUBLE = sys.float_info.max


class StrictJSONError(ValueError):
    """The text is not JSON this service accepts; the message says why."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise StrictJSONError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return value


def _no_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError(f"{text} overflows a double")
    return value


def _check_text(strings: list[str]) -> None:
    """Every string and key must be storable in PostgreSQL text (checked in one pass over all of them)."""
    text = "\n".join(strings)
    if "\x00" in text:
        raise StrictJSONError("strings may not contain U+0000")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StrictJSONError("strings may not contain unpaired surrogates") from None


def _check_value(value: Any) -> None:
    """Walks the parsed value one level at a time, so no depth can make this walk recurse."""
    level, depth = [value], 0
    strings: list[str] = []
    while level:
        depth += 1
        deeper: list[Any] = []
        for item in level:
            if isinstance(item, str):
                strings.append(item)
            elif isinstance(item, (dict, list)):
                if depth > MAX_NESTING:
                    raise StrictJSONError(f"it nests deeper than {MAX_NESTING} levels")
                if isinstance(item, dict):
                    strings.extend(item)
                    deeper.extend(item.values())
                else:
                    deeper.extend(item)
            elif type(item) is int and abs(item) > _MAX_DOUBLE:
                raise StrictJSONError(f"an integer of {len(str(abs(item)))} digits overflows a double")
        level = deeper
    _check_text(strings)


def loads(text: str) -> Any:
    """Parse `text` under the rules of docs/api.md, "5. Digests and bounds" or raise StrictJSONError."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite_float)
    except StrictJSONError:
        raise
    except RecursionError:
        # The parser recurses once per level and stops at the interpreter's limit
        # (about a thousand); anything shallower is measured by _check_value.
        raise StrictJSONError(f"it nests deeper than {MAX_NESTING} levels") from None
    except ValueError as exc:
        # Includes integers past Python's 4,300-digit conversion limit: far beyond a double anyway.
        raise StrictJSONError(str(exc)) from None
    _check_value(value)
    return value
