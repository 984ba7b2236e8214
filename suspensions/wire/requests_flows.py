"""The request bodies of correlation-keyed waits (docs/api.md, "7.7 Flow waits (correlation-keyed)"), each declared
once."""

from typing import Annotated, Any

from pydantic import Field

from .base import MAX_TTL, MISSING, Body, JSONObject, ReasonName, ShownKept, ShownKeptOrBlank, Tags

# Envelope parts are key material: a trimmed space would be another key, so whitespace is kept. They name the wait
# to a person too (its agent is `pack/flow`): no control characters (suspensions/display.py).
Part63 = Annotated[ShownKept, Field(max_length=63)]
Part100 = Annotated[ShownKept, Field(max_length=100)]
Part200OrBlank = Annotated[ShownKeptOrBlank, Field(max_length=200)]
Token = Annotated[ShownKept, Field(max_length=1024)]


class FlowEnvelope(Body):
    """Where the flow step came from; whitespace is kept (the parts are key material)."""

    tenant: Part63 = Field(description="With `env`, the wait's scope `tenant/env`: a scope segment.")
    env: Part63 = Field(description="The environment, e.g. `prod`: the second segment of the scope.")
    provider: Part200OrBlank
    channel: Part200OrBlank
    conversation: Part200OrBlank
    user: Part200OrBlank
    session_hint: Annotated[ShownKeptOrBlank, Field(max_length=900)] | None | MISSING = MISSING
    pack: Part100
    flow: Part100
    thread: Part200OrBlank | None | MISSING = MISSING
    reply_to: Part200OrBlank | None | MISSING = MISSING


class ParkFlowWaitIn(Body):
    envelope: FlowEnvelope
    snapshot: JSONObject = Field(description="The flow's state, returned unchanged by the fresh start.")
    reason: ReasonName
    ttl_seconds: Annotated[int, Field(ge=0, le=MAX_TTL)] | MISSING = Field(
        MISSING, description="As for suspend: 0 means no deadline; absent means the default (86400)."
    )
    decision_token: Token | MISSING = Field(
        MISSING, description="Required for `reason: approval`: a secret the approver's side holds."
    )
    tags: Tags | MISSING = MISSING


class DispatchResumeIn(Body):
    tenant: Part63 = Field(description="With `env`, the wait's scope `tenant/env`.")
    env: Part63 = Field(description="The second segment of the wait's scope.")
    correlation_id: Token = Field(description="The `correlation_id` the park answered, nonce included.")
    output: Any = Field(description="Any JSON; its canonical JSON is the admitted input.")
    decision_token: Token | MISSING = Field(MISSING, description="An approval wait's token, given at park time.")
