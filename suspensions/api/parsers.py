"""JSON bodies, parsed strictly by the one reader of client JSON (suspensions.strictjson,
docs/api.md, "5. Digests and bounds")."""

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from .. import strictjson


class StrictJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            return strictjson.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ParseError(f"The body is not UTF-8: {exc}") from None
        except strictjson.StrictJSONError as exc:
            raise ParseError(f"The body is not acceptable JSON: {exc}.") from None
