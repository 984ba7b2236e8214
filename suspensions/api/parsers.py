"""JSON bodies, parsed strictly: no NaN/Infinity, and no text PostgreSQL cannot store."""

import json
import math
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # 1e400 parses to inf, which no JSON encoder can write back: refuse it at the door.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a JSON number")
    return value


# Encoders, digests and serializers recurse once per level: a body nested
# deeper than this would end as a RecursionError (a 500) further down.
MAX_NESTING = 200


def _check_text(value: Any) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ParseError("Strings may not contain U+0000.")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ParseError("Strings may not contain unpaired surrogates.") from None
        elif depth > MAX_NESTING and isinstance(item, (dict, list)):
            raise ParseError(f"The body nests deeper than {MAX_NESTING} levels.")
        elif isinstance(item, dict):
            stack.extend((key, depth) for key in item)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


class StrictJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"The body is not valid JSON: {exc}") from None
        except RecursionError:
            raise ParseError(f"The body nests deeper than {MAX_NESTING} levels.") from None
        _check_text(data)
        return data
