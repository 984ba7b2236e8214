"""Request shapes, validated strictly at the boundary (docs/api.md, "1. Words";
docs/api.md, "5. Digests and bounds")."""

import base64
import binascii
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .. import policies
from .. import scopes as scope_paths
from ..models import NotificationChannel, Reason, WebhookFormat
from ..services.early import MAX_TTL as EARLY_MAX_TTL
from ..services.notifications import ROUTE_EVENT_TYPES
from ..services.webhooks import EVENT_TYPES as WEBHOOK_EVENT_TYPES
from .fields import (
    AnyJSON,
    AwareDateTime,
    JSONObject,
    JSONText,
    ShownStr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tags,
)

MAX_TTL = 10 * 365 * 86400


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
    agent_id = ShownStr(max_length=200, help_text="Your agent's name.")
    scope = StrictStr(
        max_length=192,
        required=False,
        help_text="`workspace[/project[/team]]`, within the token's scope; may be left out when the token holds "
        "`engine` in exactly one scope.",
    )
    session_id = ShownStr(
        max_length=200, required=False, allow_blank=True, default="", help_text="Your session id; may be empty."
    )
    tags = Tags()


class RunConfig(Strict):
    model = StrictStr(required=False, allow_blank=True)
    temperature = StrictFloat(required=False, allow_null=True)
    max_steps = StrictInt(required=False, min_value=0)
    max_tokens = StrictInt(required=False, min_value=0)
    reasoning_loop = StrictStr(required=False, allow_blank=True)
    tools = serializers.ListField(child=StrictStr(allow_blank=False), required=False)
    tools_restricted = StrictBool(required=False, help_text="Read back as false when absent.")
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
    messages = serializers.ListField(
        child=Message(),
        help_text="Objects with `role` and `content` (a string, a list of parts, or null); other keys "
        "(`tool_calls`, `tool_call_id`, provider extras) are kept as given.",
    )
    system_prompt = StrictStr(allow_blank=True, trim_whitespace=False, help_text="May be empty.")
    step_index = StrictInt(min_value=0)
    tokens_used = StrictInt(min_value=0)
    new_messages_from = StrictInt(
        min_value=0,
        help_text="0..len(messages): where this run's own messages begin; the ones before it are loaded "
        "history the engine must not save again.",
    )
    session_id = ShownStr(allow_blank=True, help_text="May be empty.")
    config = RunConfig(help_text="The run's configuration; may be `{}`.")
    tool_results = serializers.ListField(child=AnyJSON(), required=False)
    schema_version = StrictInt(required=False, min_value=0)
    prepared = StrictStr(required=False, allow_blank=True, trim_whitespace=False, help_text="Base64.")
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
    id = ShownStr(max_length=200)
    name = ShownStr(max_length=200)
    arguments = JSONText()
    reply_with = ShownStr(max_length=200, required=False)
    arguments_schema = JSONObject(
        required=False, help_text="Approval pauses: a JSON Schema (draft 2020-12) that edited arguments must match."
    )
    editable = StrictBool(
        required=False, help_text="Approval pauses: may an approver edit the arguments? Default false."
    )

    def validate_name(self, value: str) -> str:
        if "," in value:
            raise serializers.ValidationError("Tool names may not contain commas.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "arguments_schema" in attrs:
            problem = policies.schema_problem(attrs["arguments_schema"], attrs["arguments"])
            if problem is not None:
                raise serializers.ValidationError({"arguments_schema": [problem]})
        return attrs


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "enum": ["expire", "deny"]},
            {
                "type": "object",
                "properties": {
                    "escalate": {
                        "type": "object",
                        "properties": {"extend_seconds": {"type": "integer", "minimum": 1, "maximum": MAX_TTL}},
                        "required": ["extend_seconds"],
                    }
                },
                "required": ["escalate"],
            },
        ]
    }
)
class OnExpiryField(serializers.Field):
    """`expire`, `deny`, or `{"escalate": {"extend_seconds": n}}` (docs/policies.md, "What happens at the deadline")."""

    def to_internal_value(self, data: Any) -> Any:
        if data in ("expire", "deny"):
            return data
        if isinstance(data, dict) and set(data) == {"escalate"} and isinstance(data["escalate"], dict):
            spec = data["escalate"]
            seconds = spec.get("extend_seconds")
            if set(spec) == {"extend_seconds"} and type(seconds) is int and 1 <= seconds <= MAX_TTL:
                return data
            raise serializers.ValidationError(f"escalate needs extend_seconds, a whole number from 1 to {MAX_TTL}.")
        raise serializers.ValidationError('Must be "expire", "deny" or {"escalate": {"extend_seconds": n}}.')

    def to_representation(self, value: Any) -> Any:
        return value


class EscalationNotify(Strict):
    """Whom an escalation step asks (docs/policies.md, "Escalation chains"): at least one name in one list."""

    scopes = serializers.ListField(
        child=StrictStr(max_length=192),
        required=False,
        max_length=20,
        help_text="The approvers of these scopes (the pause's own or one above it) and their notification routes.",
    )
    groups = serializers.ListField(
        child=ShownStr(max_length=150),
        required=False,
        max_length=20,
        help_text="The approvers of the pause's scope in these user groups.",
    )
    people = serializers.ListField(
        child=ShownStr(max_length=150),
        required=False,
        max_length=50,
        help_text="The approvers of the pause's scope with these usernames.",
    )

    def validate_scopes(self, value: list[str]) -> list[str]:
        bad = [s for s in value if not scope_paths.is_valid(s)]
        if bad:
            raise serializers.ValidationError(f"Not a valid scope: {', '.join(bad)}.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not any(attrs.get(k) for k in policies.NOTIFY_KEYS):
            raise serializers.ValidationError({"non_field_errors": ["Name at least one scope, group or person."]})
        return attrs


class EscalationStep(Strict):
    after_seconds = StrictInt(
        min_value=1, max_value=MAX_TTL, help_text="Seconds after the pause was stored; before its deadline."
    )
    notify = EscalationNotify()


class ApprovalPolicy(Strict):
    quorum = StrictInt(min_value=1, max_value=5, required=False, help_text="Distinct approvers needed, 1 to 5.")
    exclude_requester = StrictBool(
        required=False, help_text="The principal that stored the pause may not decide it. Default true."
    )
    on_expiry = OnExpiryField(required=False, help_text="What the sweep does at the deadline. Default expire.")
    escalation = serializers.ListField(
        child=EscalationStep(),
        required=False,
        max_length=policies.MAX_ESCALATION_STEPS,
        help_text="An escalation chain: up to 10 steps `{after_seconds, notify}`, after_seconds strictly "
        "increasing, each run once by the sweep before the deadline.",
    )

    def validate_escalation(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index in range(1, len(value)):
            if value[index]["after_seconds"] <= value[index - 1]["after_seconds"]:
                raise serializers.ValidationError(
                    {str(index): {"after_seconds": ["Must be greater than the step before's."]}}
                )
        return value


class Suspend(Strict):
    revision = StrictInt(min_value=1)
    reason = serializers.ChoiceField(choices=Reason.choices)
    pending = serializers.ListField(child=PendingCall(), min_length=1)
    continuation = Continuation()
    ttl_seconds = StrictInt(required=False, min_value=0, max_value=MAX_TTL)
    approval = ApprovalPolicy(required=False, help_text="Approval pauses: quorum, separation of duties, on expiry.")
    engine_version = ShownStr(
        required=False,
        max_length=200,
        trim_whitespace=False,
        help_text="Your engine's version (opaque, 1 to 200 characters): a resume or start from another version "
        "is refused with `version_drift` unless it sends `accept_drift: true`.",
    )
    callback = StrictBool(
        required=False,
        help_text="true: the answer holds a `callback_url` that resumes this pause with the one-shot resume body "
        "and no token, until its deadline.",
    )
    tags = Tags()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        ids = [call["id"] for call in attrs["pending"]]
        if len(set(ids)) != len(ids):
            raise serializers.ValidationError({"pending": ["Pending call ids must be unique."]})
        if attrs.get("callback") and attrs["reason"] != Reason.EXTERNAL_TOOL:
            raise serializers.ValidationError({"callback": ["A callback URL resumes only external_tool pauses."]})
        if attrs["reason"] != Reason.APPROVAL:
            if "approval" in attrs:
                raise serializers.ValidationError({"approval": ["A policy is only for approval pauses."]})
            if any("arguments_schema" in c or "editable" in c for c in attrs["pending"]):
                raise serializers.ValidationError(
                    {"pending": ["arguments_schema and editable are only for approval pauses."]}
                )
        on_expiry = attrs.get("approval", {}).get("on_expiry", "expire")
        if on_expiry != "expire" and attrs.get("ttl_seconds") == 0:
            raise serializers.ValidationError(
                {"approval": {"on_expiry": ["A pause without a deadline (ttl_seconds 0) never expires."]}}
            )
        with_reply = [call for call in attrs["pending"] if "reply_with" in call]
        if attrs["reason"] == Reason.AGENT_REPLY:
            if len(attrs["pending"]) != 1 or not attrs["pending"][0].get("reply_with"):
                raise serializers.ValidationError(
                    {"pending": ["An agent_reply pause holds exactly one pending call, with reply_with."]}
                )
        elif with_reply:
            raise serializers.ValidationError({"pending": ["reply_with is only for agent_reply pauses."]})
        return attrs


class ExtendDeadline(Strict):
    """More time for a live pause (docs/api.md, "`POST /suspensions/{id}/extend` — more time"): `seconds` or `until`."""

    seconds = StrictInt(
        required=False,
        min_value=1,
        max_value=MAX_TTL,
        help_text="Added to the current deadline. Exactly one of seconds and until; a retry adds again "
        "unless it sends the same Idempotency-Key.",
    )
    until = AwareDateTime(
        required=False,
        help_text="The new deadline, RFC 3339 with its offset, later than the current one. The same until again "
        "answers the pause as it is (200) and writes nothing.",
    )
    reason = ShownStr(max_length=1000, help_text="Why the pause gets more time; kept on the `deadline_extended` event.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("seconds" in attrs) == ("until" in attrs):
            raise serializers.ValidationError({"seconds": ["Give exactly one of seconds and until."]})
        return attrs


class ClaimVersion(Strict):
    """What the caller saw: the run, its live pause, and the run's revision while paused on it."""

    run_id = serializers.UUIDField(help_text="The run in the path.")
    suspension_id = serializers.UUIDField(help_text="The pause's `id`.")
    run_revision = StrictInt(min_value=1, help_text="The pause's `run_revision` (the run's revision while paused).")


class Result(Strict):
    """One pending call's result: `content` or `error`, not both."""

    call_id = ShownStr(max_length=200, help_text="The pending call's `id`.")
    content = AnyJSON(required=False, allow_null=True, help_text="What the tool returned: any JSON.")
    error = StrictStr(required=False, trim_whitespace=False, help_text="Why the tool failed.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("content" in self.initial_data) == ("error" in self.initial_data):
            raise serializers.ValidationError({"non_field_errors": ["Give exactly one of content or error."]})
        return attrs

    def to_internal_value(self, data: Any) -> Any:
        self.initial_data = data
        super().to_internal_value(data)
        return data  # kept as sent: the digest binds the exact results


class DriftGuard(Strict):
    """The version-drift guard of a resume or start (docs/api.md, "Version drift: `engine_version` and `accept_drift`");
    not part of the request digest."""

    engine_version = ShownStr(
        required=False,
        max_length=200,
        trim_whitespace=False,
        help_text="Your engine's version; when the pause holds another one, the call is `version_drift` (409) "
        "unless `accept_drift` is true.",
    )
    accept_drift = StrictBool(
        required=False, help_text="Go on despite a version drift; the event records it with both versions."
    )


class Resume(DriftGuard):
    version = ClaimVersion()
    results = serializers.ListField(
        child=Result(),
        min_length=1,
        help_text="One result per pending call, in any order; a retry must send the same list in the same order.",
    )


class KeepEarlyResult(Strict):
    """A tool result that may come before its pause
    (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause")."""

    call_id = ShownStr(max_length=200, help_text="The id the pending call will have.")
    content = AnyJSON(allow_null=True, help_text="What the tool returned: any JSON, as in a one-shot resume.")
    ttl_seconds = StrictInt(
        required=False,
        min_value=1,
        max_value=EARLY_MAX_TTL,
        help_text=f"How long it is kept unused: 1 to {EARLY_MAX_TTL} seconds; absent: 3600.",
    )


class Revision(Strict):
    revision = StrictInt(min_value=1, help_text="The run's current revision; after a claim, its `claimed_revision`.")


class Start(DriftGuard):
    """A start carries no fields but the drift guard's: no body, `null`, `{}`, or `{engine_version, accept_drift}`."""


class Fail(Strict):
    revision = StrictInt(min_value=1, help_text="The run's current revision; after a claim, its `claimed_revision`.")
    error = StrictStr(max_length=10000, help_text="Why the run failed; kept as the run's `error`.")


class Admit(Strict):
    version = ClaimVersion()
    input = JSONText(
        help_text='The reply: a string holding JSON (e.g. "{\\"answer\\": 12}"), not an object; kept byte for byte.'
    )
    reply_with = ShownStr(max_length=200, help_text="The pending call's `reply_with`: the question this answers.")


class EditedCall(Strict):
    id = ShownStr(max_length=200)
    arguments = JSONText(help_text="The edited arguments: a string holding JSON, like a pending call's.")


class Decide(Strict):
    version = ClaimVersion()
    decision = serializers.ChoiceField(choices=["approve", "deny", "respond"])
    reason = StrictStr(required=False, allow_blank=True, max_length=10000)
    response = StrictStr(
        required=False, max_length=100_000, trim_whitespace=False, help_text="respond: the answer the run resumes with."
    )
    calls = serializers.ListField(
        child=EditedCall(), required=False, max_length=1000, help_text="approve: edited arguments of editable calls."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["decision"] == "deny" and not attrs.get("reason", "").strip():
            raise serializers.ValidationError({"reason": ["A denial needs a reason."]})
        if attrs["decision"] == "respond" and not attrs.get("response", "").strip():
            raise serializers.ValidationError({"response": ["A response needs words."]})
        if attrs["decision"] != "respond" and "response" in attrs:
            raise serializers.ValidationError({"response": ["Only a respond decision carries a response."]})
        if attrs["decision"] != "approve" and "calls" in attrs:
            raise serializers.ValidationError({"calls": ["Only an approve decision edits calls."]})
        return attrs


# -- webhooks (docs/api.md, "7.8 Webhooks") ---------------------------------------------------


class CreateWebhook(Strict):
    """A new endpoint; `scope` may be left out by a principal that is an operator in exactly one scope."""

    scope = StrictStr(max_length=192, required=False, help_text="May be left out by an operator in exactly one scope.")
    url = StrictStr(max_length=2000, trim_whitespace=False, help_text="http or https, without credentials.")
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=WEBHOOK_EVENT_TYPES),
        required=False,
        default=list,
        help_text="The event types to receive; empty or absent: every type.",
    )
    format = serializers.ChoiceField(
        choices=WebhookFormat.choices,
        required=False,
        default=WebhookFormat.STANDARD,
        help_text="`standard`: signed Standard Webhooks JSON; `slack`: an unsigned Slack incoming-webhook message.",
    )
    description = StrictStr(max_length=500, required=False, allow_blank=True, default="")


# -- notification routes (docs/notifications.md, "Routes") ------------------------------------


class CreateNotificationRoute(Strict):
    """A new route; `scope` may be left out by a principal that is an operator in exactly one scope."""

    scope = StrictStr(max_length=192, required=False, help_text="May be left out by an operator in exactly one scope.")
    kind = serializers.ChoiceField(
        choices=NotificationChannel.choices, help_text="`email`: an address; `slack`: a Slack channel."
    )
    target = StrictStr(
        max_length=320,
        trim_whitespace=False,
        help_text="An email address for `email`; a Slack channel id (C0123ABC, not its #name) for `slack`.",
    )
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=ROUTE_EVENT_TYPES),
        required=False,
        default=list,
        help_text="The approval events to be told of; empty or absent: all of them.",
    )
    description = StrictStr(max_length=500, required=False, allow_blank=True, default="")


# -- approval floors (issue 32, docs/policies.md "Floors") -------------------------------------


class UpdateApprovalFloor(Strict):
    """The fields to change; each left out stays as it is (services.approval_floors checks them again)."""

    quorum = StrictInt(min_value=1, max_value=5, required=False, help_text="The fewest distinct approvers, 1 to 5.")
    exclude_requester = StrictBool(required=False, help_text="Separation of duties always applies.")
    on_expiry = serializers.ListField(
        child=serializers.ChoiceField(choices=["expire", "deny", "escalate"]),
        min_length=1,
        required=False,
        help_text="The on_expiry values a pause may use, each once.",
    )
    require_linked_person = StrictBool(
        required=False, help_text="Only a principal of a person (a user, or a token linked to one) may decide."
    )
    require_escalation = StrictBool(
        required=False, help_text="An approval pause must carry an escalation chain (`approval.escalation`)."
    )


class CreateApprovalFloor(UpdateApprovalFloor):
    """A new floor; defaults: quorum 1, exclude_requester true, every on_expiry, require_linked_person and
    require_escalation false."""

    scope = StrictStr(max_length=192, required=False, help_text="May be left out by an operator in exactly one scope.")
