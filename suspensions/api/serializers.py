"""Request shapes, validated strictly at the boundary (DESIGN §2, §5)."""

import base64
import binascii
from typing import Any

from rest_framework import serializers

from ..models import Reason, WebhookFormat
from ..services.webhooks import EVENT_TYPES as WEBHOOK_EVENT_TYPES
from .fields import AnyJSON, JSONObject, JSONText, StrictBool, StrictFloat, StrictInt, StrictStr


class Strict(serializers.Serializer):
    """Unknown keys are refused: a misspelt field must not be silently dropped."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({key: ["Unknown field."] for key in unknown})
        return super().to_internal_value(data)


class RegisterRun(Strict):
    agent_id = StrictStr(max_length=200)
    scope = StrictStr(max_length=192, required=False)
    session_id = StrictStr(max_length=200, required=False, allow_blank=True, default="")


class RunConfig(Strict):
    model = StrictStr(required=False, allow_blank=True)
    temperature = StrictFloat(required=False, allow_null=True)
    max_steps = StrictInt(required=False, min_value=0)
    max_tokens = StrictInt(required=False, min_value=0)
    reasoning_loop = StrictStr(required=False, allow_blank=True)
    tools = serializers.ListField(child=StrictStr(allow_blank=False), required=False)
    tools_restricted = StrictBool(required=False)
    all_tools_restricted = StrictBool(required=False)
    persona_ref = StrictStr(required=False, allow_blank=True)
    budget = JSONObject(required=False)
    # The metaclass moves declared fields off the class, so these names do not shadow Field/Serializer attributes.
    context = JSONObject(required=False, allow_null=True)  # type: ignore[assignment]
    publication = JSONObject(required=False)


class Message(serializers.Serializer):
    # Messages carry provider-specific extras (name, tool_calls, tool_call_id...):
    # only role and content are typed here, the rest is kept as given.
    role = StrictStr()
    content = AnyJSON(allow_null=True)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Expected a message object.")
        if "content" not in data:
            raise serializers.ValidationError({"content": ["This field is required."]})
        content = data["content"]
        if content is not None and not isinstance(content, (str, list)):
            raise serializers.ValidationError({"content": ["Must be a string, a list of parts, or null."]})
        if "tool_calls" in data and not isinstance(data["tool_calls"], list):
            raise serializers.ValidationError({"tool_calls": ["Must be a list."]})
        if "tool_call_id" in data and not isinstance(data["tool_call_id"], str):
            raise serializers.ValidationError({"tool_call_id": ["Must be a string."]})
        super().to_internal_value(data)
        return data


class Continuation(Strict):
    messages = serializers.ListField(child=Message())
    system_prompt = StrictStr(allow_blank=True, trim_whitespace=False)
    step_index = StrictInt(min_value=0)
    tokens_used = StrictInt(min_value=0)
    new_messages_from = StrictInt(min_value=0)
    session_id = StrictStr(allow_blank=True)
    config = RunConfig()
    tool_results = serializers.ListField(child=AnyJSON(), required=False)
    schema_version = StrictInt(required=False, min_value=0)
    prepared = StrictStr(required=False, allow_blank=True, trim_whitespace=False)
    provenance = JSONObject(required=False)
    usage = JSONObject(required=False)

    def validate_prepared(self, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise serializers.ValidationError("Must be base64.") from None
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["new_messages_from"] > len(attrs["messages"]):
            raise serializers.ValidationError(
                {"new_messages_from": [f"Must be between 0 and len(messages) = {len(attrs['messages'])}."]}
            )
        return attrs


class PendingCall(Strict):
    id = StrictStr(max_length=200)
    name = StrictStr(max_length=200)
    arguments = JSONText()
    reply_with = StrictStr(max_length=200, required=False)

    def validate_name(self, value: str) -> str:
        if "," in value:
            raise serializers.ValidationError("Tool names may not contain commas.")
        return value


class Suspend(Strict):
    revision = StrictInt(min_value=1)
    reason = serializers.ChoiceField(choices=Reason.choices)
    pending = serializers.ListField(child=PendingCall(), min_length=1)
    continuation = Continuation()
    ttl_seconds = StrictInt(required=False, min_value=0, max_value=10 * 365 * 86400)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        ids = [call["id"] for call in attrs["pending"]]
        if len(set(ids)) != len(ids):
            raise serializers.ValidationError({"pending": ["Pending call ids must be unique."]})
        with_reply = [call for call in attrs["pending"] if "reply_with" in call]
        if attrs["reason"] == Reason.AGENT_REPLY:
            if len(attrs["pending"]) != 1 or not attrs["pending"][0].get("reply_with"):
                raise serializers.ValidationError(
                    {"pending": ["An agent_reply pause holds exactly one pending call, with reply_with."]}
                )
        elif with_reply:
            raise serializers.ValidationError({"pending": ["reply_with is only for agent_reply pauses."]})
        return attrs


class ClaimVersion(Strict):
    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    run_revision = StrictInt(min_value=1)


class Result(Strict):
    call_id = StrictStr(max_length=200)
    content = AnyJSON(required=False, allow_null=True)
    error = StrictStr(required=False, trim_whitespace=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("content" in self.initial_data) == ("error" in self.initial_data):
            raise serializers.ValidationError({"non_field_errors": ["Give exactly one of content or error."]})
        return attrs

    def to_internal_value(self, data: Any) -> Any:
        self.initial_data = data
        super().to_internal_value(data)
        return data  # kept as sent: the digest binds the exact results


class Resume(Strict):
    version = ClaimVersion()
    results = serializers.ListField(child=Result(), min_length=1)


class Revision(Strict):
    revision = StrictInt(min_value=1)


class Fail(Strict):
    revision = StrictInt(min_value=1)
    error = StrictStr(max_length=10000)


class Admit(Strict):
    version = ClaimVersion()
    input = JSONText()
    reply_with = StrictStr(max_length=200)


class Decide(Strict):
    version = ClaimVersion()
    decision = serializers.ChoiceField(choices=["approve", "deny"])
    reason = StrictStr(required=False, allow_blank=True, max_length=10000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["decision"] == "deny" and not attrs.get("reason", "").strip():
            raise serializers.ValidationError({"reason": ["A denial needs a reason."]})
        return attrs


# -- webhooks (DESIGN §14) --------------------------------------------------------------------


class CreateWebhook(Strict):
    """A new endpoint; `scope` may be left out by a principal that is an operator in exactly one scope."""

    scope = StrictStr(max_length=192, required=False)
    url = StrictStr(max_length=2000, trim_whitespace=False)
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=WEBHOOK_EVENT_TYPES),
        required=False,
        default=list,
        help_text="The event types to receive; empty or absent: every type.",
    )
    format = serializers.ChoiceField(choices=WebhookFormat.choices, required=False, default=WebhookFormat.STANDARD)
    description = StrictStr(max_length=500, required=False, allow_blank=True, default="")
