"""The request bodies of runs, pauses and claims (docs/api.md, "7. Endpoints"), each declared once: the model
validates the body, writes its refusals (api/views.validated) and is the OpenAPI request schema (api/docs)."""

import re
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, Field, PlainValidator, WithJsonSchema, model_validator

from .. import policies
from ..models import Reason
from .base import (
    MAX_TTL,
    MISSING,
    AwareTime,
    Base64,
    Body,
    Count,
    JSONObject,
    JSONText,
    Kept,
    NotNull,
    Number,
    Open,
    ReasonName,
    Shown,
    Shown200,
    ShownKept,
    ShownOrBlank,
    Tags,
    Text,
    Trimmed,
    Ttl,
    Uuid,
    given,
    refuse,
)
from .base import (
    Revision as RunRevision,
)
from .escalation import CHAIN_HELP, Chain

# The closure request's schema version, and how long an early result may be kept: bounds the services apply too
# (services/closure.py, services/early.py read them here).
CLOSURE_SCHEMA_VERSION = 1
EARLY_MAX_TTL = 7 * 86400


# -- the pause ----------------------------------------------------------------------------------


class RunConfig(Body):
    model: Trimmed | MISSING = MISSING
    temperature: Number | None | MISSING = MISSING
    max_steps: Count | MISSING = MISSING
    max_tokens: Count | MISSING = MISSING
    reasoning_loop: Trimmed | MISSING = MISSING
    tools: list[Text] | MISSING = MISSING
    tools_restricted: bool | MISSING = Field(MISSING, description="Read back as false when absent.")
    all_tools_restricted: bool | MISSING = MISSING
    persona_ref: Trimmed | MISSING = MISSING
    budget: JSONObject | MISSING = MISSING
    context: JSONObject | None | MISSING = MISSING
    publication: JSONObject | MISSING = MISSING


def _content(value: Any) -> Any:
    if value is not None and type(value) not in (str, list):
        refuse("Must be a string, a list of parts, or null.")
    return value


CONTENT_SCHEMA = {"oneOf": [{"type": "string"}, {"type": "array", "items": {}}], "nullable": True}


class Message(Open):
    """Messages carry provider-specific extras (name, tool_calls, tool_call_id...): only role and content are typed
    here, the rest is kept as given."""

    role: Text
    content: Annotated[Any, AfterValidator(_content), WithJsonSchema(CONTENT_SCHEMA)] = Field(
        description="A string, a list of parts, or null."
    )
    tool_calls: list[Any] | MISSING = MISSING
    tool_call_id: str | MISSING = MISSING

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, data: Any) -> Any:
        if type(data) is not dict:
            refuse("Expected a message object.")
        if "content" not in data:  # the one refusal of a message without it
            refuse("This field is required.", "content")
        return data


class Continuation(Body):
    messages: list[Message] = Field(
        description="Objects with `role` and `content` (a string, a list of parts, or null); other keys "
        "(`tool_calls`, `tool_call_id`, provider extras) are kept as given."
    )
    system_prompt: str = Field(description="May be empty.")
    step_index: Count
    tokens_used: Count
    new_messages_from: Count = Field(
        description="0..len(messages): where this run's own messages begin; the ones before it are loaded "
        "history the engine must not save again."
    )
    session_id: ShownOrBlank = Field(description="May be empty.")
    config: RunConfig = Field(description="The run's configuration; may be `{}`.")
    tool_results: list[NotNull] | MISSING = MISSING
    schema_version: Count | MISSING = MISSING
    prepared: Base64 | MISSING = MISSING
    provenance: JSONObject | MISSING = MISSING
    usage: JSONObject | MISSING = MISSING

    @model_validator(mode="after")
    def _new_messages_within(self) -> Self:
        if self.new_messages_from > len(self.messages):
            refuse(f"Must be between 0 and len(messages) = {len(self.messages)}.", "new_messages_from")
        return self


def _no_comma(name: str) -> str:
    if "," in name:
        refuse("Tool names may not contain commas.")
    return name


ToolName = Annotated[Shown200, AfterValidator(_no_comma)]


class PendingCall(Body):
    id: Shown200 = Field(
        description="Unique within the pause; at most 200 characters. Results and decisions name the call by it."
    )
    name: ToolName = Field(description="The tool's name; at most 200 characters, no commas.")
    arguments: JSONText = Field(
        description='A string holding JSON, as the model wrote it (e.g. "{\\"amount\\": 900}"); not an object. '
        "Strict JSON; stored and returned byte for byte."
    )
    reply_with: Shown200 | MISSING = Field(
        MISSING,
        description="Only on the one pending call of an `agent_reply` pause, where it is required: the bus's "
        "reply must name it.",
    )
    arguments_schema: JSONObject | MISSING = Field(
        MISSING, description="Approval pauses: a JSON Schema (draft 2020-12) that edited arguments must match."
    )
    editable: bool | MISSING = Field(
        MISSING, description="Approval pauses: may an approver edit the arguments? Default false."
    )

    @model_validator(mode="after")
    def _schema_applies(self) -> Self:
        if self.arguments_schema is not MISSING:
            problem = policies.schema_problem(self.arguments_schema, self.arguments)
            if problem is not None:
                refuse(problem, "arguments_schema")
        return self


def _on_expiry(value: Any) -> Any:
    if value in ("expire", "deny") and type(value) is str:
        return value
    if type(value) is dict and set(value) == {"escalate"} and type(value["escalate"]) is dict:
        seconds = value["escalate"].get("extend_seconds")
        if set(value["escalate"]) == {"extend_seconds"} and type(seconds) is int and 1 <= seconds <= MAX_TTL:
            return value
        refuse(f"escalate needs extend_seconds, a whole number from 1 to {MAX_TTL}.")
    refuse('Must be "expire", "deny" or {"escalate": {"extend_seconds": n}}.')


ON_EXPIRY_SCHEMA = {
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
# `expire`, `deny`, or `{"escalate": {"extend_seconds": n}}` (docs/policies.md, "What happens at the deadline").
OnExpiry = Annotated[str | dict[str, Any], PlainValidator(_on_expiry), WithJsonSchema(ON_EXPIRY_SCHEMA)]


class ApprovalPolicy(Body):
    quorum: Annotated[int, Field(ge=1, le=5)] | MISSING = Field(
        MISSING, description="Distinct approvers needed, 1 to 5."
    )
    exclude_requester: bool | MISSING = Field(
        MISSING, description="The principal that stored the pause may not decide it. Default true."
    )
    on_expiry: OnExpiry | MISSING = Field(MISSING, description="What the sweep does at the deadline. Default expire.")
    escalation: Chain | MISSING = Field(MISSING, description=CHAIN_HELP)


class Pause(Body):
    """A pause's body: a suspend's without `revision` (the `suspend` of a register, docs/api.md, "One call to
    pause: `POST /runs` with `suspend`"), and with it a suspend's own (`Suspend`)."""

    reason: ReasonName = Field(
        description="Who answers: an approver (`approval`), the engine itself (`external_tool`) or another agent "
        "(`agent_reply`)."
    )
    pending: list[PendingCall] = Field(
        min_length=1,
        description="At least one call, ids unique. An `agent_reply` pause holds exactly one, with `reply_with`.",
    )
    continuation: Continuation = Field(
        description="Everything the engine needs to pick up where it stopped; validated now, so a resume never "
        "meets a broken one."
    )
    ttl_seconds: Ttl | MISSING = Field(
        MISSING,
        description="Seconds until the deadline, 0 to 315360000. 0 means no deadline (`expires_at: null`); "
        "absent means the default (86400).",
    )
    approval: ApprovalPolicy | MISSING = Field(
        MISSING, description="Approval pauses: quorum, separation of duties, on expiry."
    )
    engine_version: Annotated[ShownKept, Field(max_length=200)] | MISSING = Field(
        MISSING,
        description="Your engine's version (opaque, 1 to 200 characters): a resume or start from another version "
        "is refused with `version_drift` unless it sends `accept_drift: true`.",
    )
    callback: bool | MISSING = Field(
        MISSING,
        description="true: the answer holds a `callback_url` that resumes this pause with the one-shot resume body "
        "and no token, until its deadline.",
    )
    tags: Tags | MISSING = MISSING

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        calls = self.pending
        if len({call.id for call in calls}) != len(calls):
            refuse("Pending call ids must be unique.", "pending")
        if self.callback is True and self.reason != Reason.EXTERNAL_TOOL:
            refuse("A callback URL resumes only external_tool pauses.", "callback")
        if self.reason != Reason.APPROVAL:
            if self.approval is not MISSING:
                refuse("A policy is only for approval pauses.", "approval")
            if any(c.arguments_schema is not MISSING or c.editable is not MISSING for c in calls):
                refuse("arguments_schema and editable are only for approval pauses.", "pending")
        on_expiry = MISSING if self.approval is MISSING else self.approval.on_expiry
        if on_expiry not in (MISSING, "expire") and self.ttl_seconds == 0:
            refuse("A pause without a deadline (ttl_seconds 0) never expires.", "approval", "on_expiry")
        if self.reason == Reason.AGENT_REPLY:
            if len(calls) != 1 or calls[0].reply_with is MISSING:
                refuse("An agent_reply pause holds exactly one pending call, with reply_with.", "pending")
        elif any(c.reply_with is not MISSING for c in calls):
            refuse("reply_with is only for agent_reply pauses.", "pending")
        return self


class Suspend(Pause):
    revision: RunRevision = Field(description="The run's current revision.")


class RegisterRun(Body):
    agent_id: Shown200 = Field(description="Your agent's name.")
    scope: Annotated[Text, Field(max_length=192)] | MISSING = Field(
        MISSING,
        description="`workspace[/project[/team]]`, within the token's scope; may be left out when the token holds "
        "`engine` in exactly one scope.",
    )
    session_id: Annotated[ShownOrBlank, Field(max_length=200)] = Field("", description="Your session id; may be empty.")
    tags: Tags | MISSING = MISSING
    suspend: Pause | MISSING = Field(
        MISSING,
        description="Register and pause in one call: a suspend's body without `revision`. The answer is then "
        "`{run, suspension}`, the run paused at revision 2.",
    )


# -- claims -------------------------------------------------------------------------------------


class ClaimVersion(Body):
    """What the caller saw: the run, its live pause, and the run's revision while paused on it."""

    run_id: Uuid = Field(description="The run in the path.")
    suspension_id: Uuid = Field(description="The pause's `id`.")
    run_revision: RunRevision = Field(description="The pause's `run_revision` (the run's revision while paused).")


class Result(Body):
    """One pending call's result: `content` or `error`, not both."""

    call_id: Shown200 = Field(description="The pending call's `id`.")
    content: Any | MISSING = Field(MISSING, description="What the tool returned: any JSON.")
    error: Kept | MISSING = Field(MISSING, description="Why the tool failed.")

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.content is MISSING) == (self.error is MISSING):
            refuse("Give exactly one of content or error.", "non_field_errors")
        return self


class DriftGuard(Body):
    """The version-drift guard of a resume or start (docs/api.md, "Version drift: `engine_version` and
    `accept_drift`"); not part of the request digest."""

    engine_version: Annotated[ShownKept, Field(max_length=200)] | MISSING = Field(
        MISSING,
        description="Your engine's version; when the pause holds another one, the call is `version_drift` (409) "
        "unless `accept_drift` is true.",
    )
    accept_drift: bool | MISSING = Field(
        MISSING, description="Go on despite a version drift; the event records it with both versions."
    )


class Resume(DriftGuard):
    version: ClaimVersion
    results: list[Result] = Field(
        min_length=1,
        description="One result per pending call, in any order; a retry must send the same list in the same order.",
    )


class Revision(Body):
    revision: RunRevision = Field(description="The run's current revision; after a claim, its `claimed_revision`.")


class Fail(Body):
    revision: RunRevision = Field(description="The run's current revision; after a claim, its `claimed_revision`.")
    error: Annotated[Text, Field(max_length=10000)] = Field(
        description="Why the run failed; kept as the run's `error`."
    )


class Start(DriftGuard):
    """A start carries no fields but the drift guard's: no body, `null`, `{}`, or `{engine_version, accept_drift}`."""


class KeepEarlyResult(Body):
    """A tool result that may come before its pause
    (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause")."""

    call_id: Shown200 = Field(description="The id the pending call will have.")
    content: Any = Field(description="What the tool returned: any JSON, as in a one-shot resume.")
    ttl_seconds: Annotated[int, Field(ge=1, le=EARLY_MAX_TTL)] | MISSING = Field(
        MISSING, description=f"How long it is kept unused: 1 to {EARLY_MAX_TTL} seconds; absent: 3600."
    )


class Admit(Body):
    version: ClaimVersion
    input: JSONText = Field(
        description='The reply: a string holding JSON (e.g. "{\\"answer\\": 12}"), not an object; kept byte for byte.'
    )
    reply_with: Shown200 = Field(description="The pending call's `reply_with`: the question this answers.")


# -- decisions ----------------------------------------------------------------------------------


class EditedCall(Body):
    id: Shown200
    arguments: JSONText = Field(description="The edited arguments: a string holding JSON, like a pending call's.")


class Decide(Body):
    version: ClaimVersion = Field(description="The approval's `version` (`GET /approvals/{id}`).")
    decision: Literal["approve", "deny", "respond"] = Field(
        description="`approve` admits the pending calls; `deny` fails the run with `reason`; `respond` admits the "
        "run with your `response` instead of running the calls."
    )
    reason: Annotated[Trimmed, Field(max_length=10000)] | MISSING = Field(
        MISSING, description="Kept as the note of an approval; required, and not blank, for a denial."
    )
    response: Annotated[Kept, Field(max_length=100_000)] | MISSING = Field(
        MISSING, description="respond: the answer the run resumes with."
    )
    calls: Annotated[list[EditedCall], Field(max_length=1000)] | MISSING = Field(
        MISSING, description="approve: edited arguments of editable calls."
    )
    acting_for: Annotated[Text, Field(max_length=150)] | MISSING = Field(
        MISSING,
        description="Decide for this person (a username) through a delegation you hold from them now "
        '(docs/identity.md, "Delegation"); 403 not_delegated otherwise.',
    )

    @model_validator(mode="after")
    def _fits_the_decision(self) -> Self:
        if self.decision == "deny" and not given(self.reason, "").strip():
            refuse("A denial needs a reason.", "reason")
        if self.decision == "respond" and not given(self.response, "").strip():
            refuse("A response needs words.", "response")
        if self.decision != "respond" and self.response is not MISSING:
            refuse("Only a respond decision carries a response.", "response")
        if self.decision != "approve" and self.calls is not MISSING:
            refuse("Only an approve decision edits calls.", "calls")
        return self


# A list of decisions takes at most this many items (docs/api.md, "`POST /approvals/decide`: a list of decisions").
MAX_DECISIONS = 100


class DecideItem(Decide):
    """One item of a list of decisions: a single decide's body plus the id of the approval it decides."""

    approval_id: Uuid = Field(description="The approval's `suspension_id`, as in its single decide's path.")


class DecideMany(Body):
    items: Annotated[list[DecideItem], Field(min_length=1, max_length=MAX_DECISIONS)] = Field(
        description="1 to 100 decisions, each decided on its own, in this order; each approval at most once."
    )


# -- closure of an uncertain start (docs/api.md, "7.6 Closure of an uncertain start") ----------


def _sha256(value: str) -> str:
    if not HEX_SHA256.fullmatch(value):
        refuse("Must be a lowercase hex SHA-256 digest.")
    return value


HEX_SHA256 = re.compile(r"[0-9a-f]{64}")
Digest = Annotated[Text, AfterValidator(_sha256), WithJsonSchema({"type": "string", "pattern": "^[0-9a-f]{64}$"})]


class Close(Body):
    """The closure request; unknown keys (an `actor`, say) are refused: the actor is the authenticated operator."""

    schema_version: Annotated[int, Field(ge=1, le=CLOSURE_SCHEMA_VERSION)] = Field(description="`1`.")
    version: ClaimVersion = Field(description="The latest admission's `version`.")
    admission_digest: Digest = Field(description="The latest admission's `request_digest`.")
    start_digest: Digest = Field(description="The latest admission's start receipt `digest`.")
    run_revision: RunRevision = Field(description="The run's current `revision`.")
    issuer: Shown200 = Field(description="Who issued the proof (a runbook, a tool).")
    issuer_revision: Shown200 = Field(description="The issuer's version.")
    proof_ref: Annotated[Shown, Field(max_length=2000)] = Field(
        description="Where the proof is (an incident, a log link)."
    )
    proof_digest: Digest = Field(description="Lowercase hex SHA-256 of the proof.")
    observed_at: AwareTime = Field(description="When the proof was observed; not after now. RFC 3339 with an offset.")
    expires_at: AwareTime = Field(description="Until when the proof holds; after now and after `observed_at`.")

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.expires_at <= self.observed_at:
            refuse("Must be after observed_at.", "expires_at")
        return self


class A2ADecision(Body):
    """The data part of an A2A message that answers an approval task (docs/api.md, "A2A"): a decide's body without
    its `version`, which the task names; `note` and `edits` are an approve's `reason` and `calls`."""

    decision: Literal["approve", "deny", "respond"] = Field(description="As a decide's `decision`.")
    note: Annotated[Trimmed, Field(max_length=10000)] | MISSING = Field(
        MISSING, description="approve or respond: the approver's note."
    )
    reason: Annotated[Trimmed, Field(max_length=10000)] | MISSING = Field(
        MISSING, description="deny: why; required, and not blank."
    )
    edits: Annotated[list[EditedCall], Field(max_length=1000)] | MISSING = Field(
        MISSING, description="approve: edited arguments of editable calls."
    )
    response: Annotated[Kept, Field(max_length=100_000)] | MISSING = Field(
        MISSING, description="respond: the answer the run resumes with."
    )

    @model_validator(mode="after")
    def _fits_the_decision(self) -> Self:
        if self.decision == "deny" and self.note is not MISSING:
            refuse("A denial gives its reason in `reason`.", "note")
        if self.decision != "deny" and self.reason is not MISSING:
            refuse("Only a denial carries a reason; an approve or respond has a `note`.", "reason")
        return self

    def decide(self, version: dict[str, Any]) -> dict[str, Any]:
        """The decide body it stands for, to be validated as one (`Decide`): the same refusals as the REST API's."""
        body: dict[str, Any] = {"version": version, "decision": self.decision}
        note = self.reason if self.decision == "deny" else self.note
        if note is not MISSING:
            body["reason"] = note
        if self.response is not MISSING:
            body["response"] = self.response
        if self.edits is not MISSING:
            body["calls"] = [e.model_dump() for e in self.edits]
        return body
