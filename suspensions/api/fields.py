"""Strict JSON fields: DRF coerces "3" into 3 and 3 into "3"; the contract does not."""

from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime
from rest_framework import serializers

from .. import digests, display, strictjson, tags
from ..strictjson import MAX_SAFE_INTEGER


class StrictInt(serializers.IntegerField):
    """At most ±2^53 unless the field says less (docs/api.md, "5. Digests and bounds"): beyond it a JSON reader may
    round the value."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_value", MAX_SAFE_INTEGER)
        kwargs.setdefault("min_value", -MAX_SAFE_INTEGER)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictStr(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ShownStr(StrictStr):
    """A name or id a person is shown (a tool name, an agent id): no control characters (suspensions/display.py)."""

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, str) and display.has_control(data):
            raise serializers.ValidationError(display.RULE)
        return super().to_internal_value(data)


class JSONText(StrictStr):
    """A string holding JSON (arguments, input, schemas): read by the same reader as bodies, kept as sent."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        text = super().to_internal_value(data)
        try:
            strictjson.loads(text)
        except strictjson.StrictJSONError as exc:
            raise serializers.ValidationError(f"Must be a string holding valid JSON: {exc}.") from None
        return text  # never a re-encoding: the retained text is the one sent


class Tags(serializers.ListField):
    """A run's or a pause's tags (suspensions/tags.py): at most 10 distinct, each 1 to 64 of [a-z0-9._:-]."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", "Your labels: " + tags.RULE + " Lists filter on them with `?tag=`.")
        super().__init__(
            child=StrictStr(max_length=tags.MAX_LENGTH, trim_whitespace=False), max_length=tags.MAX_TAGS, **kwargs
        )

    def to_internal_value(self, data: Any) -> list[str]:
        value = super().to_internal_value(data)
        if not tags.valid(value):
            raise serializers.ValidationError(tags.RULE)
        return value  # type: ignore[no-any-return]


class StrictBool(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictFloat(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class JSONObject(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Expected a JSON object.")
        return data


class AnyJSON(serializers.JSONField):
    """Any JSON value, taken as parsed."""


class AwareDateTime(serializers.DateTimeField):
    """RFC 3339 with an explicit offset: a proof's window must not depend on the server's time zone."""

    def to_internal_value(self, value: Any) -> datetime:
        try:
            parsed = parse_datetime(value) if isinstance(value, str) else None
        except ValueError:
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            raise serializers.ValidationError("Give an RFC 3339 time with its offset, e.g. 2026-01-01T12:00:00Z.")
        moment = digests.utc_or_none(parsed)
        if moment is None:
            # 0001-01-01T00:00:00+01:00 is a valid RFC 3339 time whose UTC instant falls before year 1.
            raise serializers.ValidationError("The time falls outside years 1 to 9999 in UTC.")
        return moment
