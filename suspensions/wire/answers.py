"""The answer bodies (docs/api.md, "7. Endpoints"): one pydantic model each, declared once.

Each model's `of(...)` builds the answer from the rows and small dataclasses
the services return; `wire()` is the JSON the API writes (and the console,
email and Slack read); drf-spectacular documents the same model in the OpenAPI
schema (api/schema.py, `AnswerSchemas`). A field's declaration order is its
order on the wire. Nothing here touches the database.

Three kinds of field keep the bytes the API always wrote:

- `Moment`: RFC 3339 in UTC with a Z and six-digit microseconds (receipts
  are digested over this form); `DrfMoment`, a run's times, as DRF's
  DateTimeField wrote them (microseconds only when there are some).
- `AsGiven[...]`: JSON the engine or a person gave and the service stored
  (pending calls, a continuation, results, a closure request): written back
  key for key as stored, documented as the annotated type.
- `X | MISSING`: a key written only when it applies (a claim's `input`, a
  pause's `callback_url`); it is never null, and the schema does not require it.

The models are built validated (pydantic-core checks each value against its
declaration, faster than `model_construct` measured; bench/cpu.py holds the
requests' cost to the dicts they replaced); tests/api/test_shapes.py and
tests/api/test_openapi.py hold real answers to the schema.
"""

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, Self, TypeVar
from uuid import UUID

from pydantic import MISSING, BaseModel, ConfigDict, Field, PlainSerializer, RootModel, WithJsonSchema, WrapValidator

from .. import digests
from ..models import (
    Admission,
    Approval,
    ApprovalStatus,
    ApprovalVote,
    ClosureReceipt,
    ExpiryReceipt,
    Run,
    RunState,
    Start,
    Suspension,
)


def _drf_time(moment: datetime) -> str | None:
    return digests.rfc3339(moment, "auto")


_TIME = WithJsonSchema({"type": "string", "format": "date-time"})
Moment = Annotated[datetime, PlainSerializer(digests.rfc3339, return_type=str), _TIME]
DrfMoment = Annotated[datetime, PlainSerializer(_drf_time, return_type=str), _TIME]
T = TypeVar("T")
# Neither validated nor reshaped: kept and written as held. Neither function has a return annotation, so that the
# schema is the annotated type's (pydantic's SkipValidation loses a model's definition in a serialization schema).
AsGiven = Annotated[T, WrapValidator(lambda value, _: value), PlainSerializer(lambda value: value)]


def absent(description: str = "") -> Any:
    """The default of an `X | MISSING` field: left out of the answer unless given."""
    return Field(MISSING, description=description or None)


def doc(description: str) -> Any:
    return Field(description=description)


class Answer(BaseModel):
    """An answer body: built by `of(...)`, written by `wire()`."""

    model_config = ConfigDict(frozen=True)

    def wire(self) -> dict[str, Any]:
        """The answer as JSON reads it: what the API writes, key for key."""
        return self.model_dump(mode="json")


# -- a list of decisions (docs/api.md, "`POST /approvals/decide`: a list of decisions") -----------


class DecisionResultOut(Answer):
    approval_id: UUID
    status: int = Field(description="What `POST /approvals/{approval_id}/decide` would have answered.")
    body: dict[str, Any] = Field(
        description="That answer's body: a decision (as the single decide's 200, 201 or 202) or a problem."
    )


class DecisionsOut(Answer):
    results: list[DecisionResultOut] = Field(description="One result per item, in the items' order.")


# -- claims: versions, receipts, runs and pauses ------------------------------------------------


class VersionOut(Answer):
    run_id: UUID
    suspension_id: UUID
    run_revision: int

    @classmethod
    def of(cls, run_id: Any, suspension_id: Any, run_revision: int) -> Self:
        return cls(run_id=run_id, suspension_id=suspension_id, run_revision=int(run_revision))


class AdmissionReceiptOut(Answer):
    """The immutable proof of a claim: no mutable state in it, so a replay answers it unchanged."""

    id: UUID
    run_id: UUID
    suspension_id: UUID
    scope: str
    source: str
    version: VersionOut
    request_digest: str
    suspension_digest: str
    claimed_revision: int
    admitted_at: Moment
    actor: str
    valid: bool = doc("The request digest recomputed from the retained request matches.")
    fresh: bool

    @classmethod
    def of(cls, admission: Admission, *, fresh: bool) -> Self:
        return cls(**_receipt_fields(admission, fresh))


def _receipt_fields(admission: Admission, fresh: bool) -> dict[str, Any]:
    version = digests.version_dict(admission.run_id, admission.suspension_id, admission.version_revision)
    return {
        "id": admission.id,
        "run_id": admission.run_id,
        "suspension_id": admission.suspension_id,
        "scope": admission.scope,
        "source": admission.source,
        "version": VersionOut.of(admission.run_id, admission.suspension_id, admission.version_revision),
        "request_digest": admission.request_digest,
        "suspension_digest": admission.suspension_digest,
        "claimed_revision": admission.claimed_revision,
        "admitted_at": admission.admitted_at,
        "actor": admission.actor,
        # Integrity: the digest recomputed from the retained request.
        "valid": digests.request_digest(scope=admission.scope, version=version, input=admission.input)
        == admission.request_digest,
        "fresh": fresh,
    }


class AdmissionRowOut(AdmissionReceiptOut):
    """A receipt in a list: with where the admission is now (the receipt itself never changes)."""

    state: str

    @classmethod
    def of(cls, admission: Admission, *, fresh: bool = False) -> Self:
        return cls(**_receipt_fields(admission, fresh), state=admission.state)


class StartReceiptOut(Answer):
    run_id: UUID
    suspension_id: UUID
    run_revision: int
    request_digest: str
    started_at: Moment
    digest: str
    valid: bool

    @classmethod
    def of(cls, start: Start) -> Self:
        valid = (
            digests.start_digest(
                run_id=start.run_id,
                suspension_id=start.suspension_id,
                run_revision=start.run_revision,
                request_digest=start.request_digest,
                started_at=start.started_at,
            )
            == start.digest
        )
        return cls(
            run_id=start.run_id,
            suspension_id=start.suspension_id,
            run_revision=start.run_revision,
            request_digest=start.request_digest,
            started_at=start.started_at,
            digest=start.digest,
            valid=valid,
        )


class LatestAdmissionOut(AdmissionRowOut):
    start: StartReceiptOut | None

    @classmethod
    def of_latest(cls, admission: Admission, start: Start | None) -> Self:
        receipt = StartReceiptOut.of(start) if start is not None else None
        return cls(**_receipt_fields(admission, False), state=admission.state, start=receipt)


class RunOut(Answer):
    """A run: the answer to a register or an end, and each row of GET /runs.

    Its times are written as DRF's DateTimeField wrote them, which this body
    always used: ISO 8601 in UTC with a Z, microseconds only when there are some.
    """

    id: UUID
    scope: str
    agent_id: str
    session_id: str
    state: str
    revision: int
    error: str
    last_reason: str
    tags: list[str] = doc("The tags given at register.")
    created_at: DrfMoment
    updated_at: DrfMoment
    suspension_id: UUID | None = doc("The run's live pause, if it has one.")

    @classmethod
    def of(cls, run: Run) -> Self:
        return cls(
            id=run.id,
            scope=run.scope,
            agent_id=run.agent_id,
            session_id=run.session_id,
            state=run.state,
            revision=run.revision,
            error=run.error,
            last_reason=run.last_reason,
            tags=list(run.tags),
            created_at=run.created_at,
            updated_at=run.updated_at,
            suspension_id=getattr(run, "live_suspension_id", None),
        )


class EventOut(Answer):
    """One audit event of a run."""

    id: int
    run_id: UUID
    scope: str
    kind: str
    actor: str
    revision: int
    data: AsGiven[Any]
    at: DrfMoment
    prev_hash: str = doc("The hash of the run's previous event; 64 zeros for its first.")
    hash: str = doc(
        "SHA-256 (lowercase hex) over prev_hash, a newline and the canonical JSON of "
        "{id, run_id, scope, kind, actor, revision, data, at}: the run's audit chain."
    )

    @classmethod
    def of(cls, e: Any) -> Self:
        fields = {name: getattr(e, name) for name in ("id", "run_id", "scope", "kind", "actor", "revision", "data")}
        return cls(**fields, at=e.at, prev_hash=e.prev_hash, hash=e.hash)


class PendingCallOut(Answer):
    id: str
    name: str
    arguments: str = doc("A string holding JSON, byte for byte as given; not an object.")
    reply_with: str | MISSING = absent("Only on the one call of an `agent_reply` pause.")
    arguments_schema: Any | MISSING = absent("Approval pauses: as given (docs/policies.md).")
    editable: bool | MISSING = absent("Approval pauses: as given (docs/policies.md).")


class SuspensionOut(Answer):
    """The pause as the engine gave it, with where its run is now (GET /suspensions/{id})."""

    id: UUID
    run_id: UUID
    scope: str
    reason: str
    pending: AsGiven[list[PendingCallOut]]
    continuation: AsGiven[Any]
    expires_at: Moment | None
    created_at: Moment
    correlation_id: str | None
    engine_version: str | None = doc("The engine's version when it paused, if given.")
    tags: list[str] = doc("The run's tags, then the pause's own.")
    run_revision: int | MISSING = absent()
    run_state: str | MISSING = absent()

    @classmethod
    def of(cls, s: Suspension, *, detail: bool = True) -> Self:
        """The pause; with `run_revision` and `run_state` unless it is the one a claim carries (`detail=False`)."""
        where = {"run_revision": s.run.revision, "run_state": s.run.state} if detail else {}
        return cls(**_pause_fields(s), **where)


def _pause_fields(s: Suspension) -> dict[str, Any]:
    """The pause as the engine gave it (RunConfig's absent tools_restricted reads as false)."""
    continuation = json.loads(s.continuation)
    config = continuation.get("config")
    if isinstance(config, dict):
        config.setdefault("tools_restricted", False)
    return {
        "id": s.id,
        "run_id": s.run_id,
        "scope": s.scope,
        "reason": s.reason,
        "pending": json.loads(s.pending),
        "continuation": continuation,
        "expires_at": s.expires_at,
        "created_at": s.created_at,
        "correlation_id": s.correlation_id or None,
        "engine_version": s.engine_version or None,
        "tags": list(s.tags),
    }


class SuspensionSummaryOut(Answer):
    """A list row: the pause without its (possibly large) continuation."""

    id: UUID
    run_id: UUID
    scope: str
    agent_id: str
    reason: str
    pending: AsGiven[list[PendingCallOut]]
    expires_at: Moment | None
    created_at: Moment
    run_revision: int
    run_state: str
    correlation_id: str | None
    tags: list[str] = doc("The run's tags, then the pause's own.")

    @classmethod
    def of(cls, s: Suspension) -> Self:
        return cls(
            id=s.id,
            run_id=s.run_id,
            scope=s.scope,
            agent_id=s.run.agent_id,
            reason=s.reason,
            pending=json.loads(s.pending),
            expires_at=s.expires_at,
            created_at=s.created_at,
            run_revision=s.run.revision,
            run_state=s.run.state,
            correlation_id=s.correlation_id or None,
            tags=list(s.tags),
        )


class ClaimedOut(Answer):
    """A claim or a start: receipts; only a fresh grant of execution carries the pause and its input."""

    run_id: UUID
    run_revision: int
    run_state: str
    admission: AdmissionReceiptOut | MISSING = absent()
    start: StartReceiptOut | MISSING = absent()
    fresh: bool
    suspension: SuspensionOut | MISSING = absent()
    results: AsGiven[list[Any]] | MISSING = absent()
    input: str | MISSING = absent()

    @classmethod
    def of(cls, claimed: Any) -> Self:
        """A claim or a start (services.Claimed)."""
        body: dict[str, Any] = {"run_id": claimed.run.id, "run_revision": claimed.run.revision}
        body["run_state"] = claimed.run.state
        if claimed.admission is not None:
            fresh = claimed.fresh if claimed.admission_fresh is None else claimed.admission_fresh
            body["admission"] = AdmissionReceiptOut.of(claimed.admission, fresh=fresh)
        if claimed.start is not None:
            body["start"] = StartReceiptOut.of(claimed.start)
        body["fresh"] = claimed.fresh
        if claimed.fresh and claimed.suspension is not None:
            body["suspension"] = SuspensionOut.of(claimed.suspension, detail=False)
            if claimed.results is not None:
                body["results"] = claimed.results
            elif claimed.admission is not None:
                body["input"] = claimed.admission.input
        return cls(**body)


class PausedOut(SuspensionOut):
    """The answer to a pause: the pause, its callback URL when asked, the resume its early results completed.

    A pause resumed at once is shown as it was stored (`run_state` paused, the
    `run_revision` of its claim version), so that `{run_id, id, run_revision}`
    stays its claim version; `resume` says where the run is now.
    """

    callback_url: str | MISSING = absent("With `callback: true`: POST the one-shot resume body here, with no token.")
    resume: ClaimedOut | MISSING = absent(
        "When early results answered every pending call: the one-shot resume's own answer; the run is where that "
        "resume left it (the pause's own `run_revision` and `run_state` are as it was stored)."
    )

    @classmethod
    def of_paused(cls, paused: Any, callback_url: str | None = None) -> Self:
        """The answer to a pause (services.Paused)."""
        s = paused.suspension
        body: dict[str, Any] = {**_pause_fields(s), "run_revision": s.run.revision, "run_state": s.run.state}
        if callback_url is not None:
            body["callback_url"] = callback_url
        if paused.resume is not None:
            body["run_revision"] = paused.resume.admission.version_revision
            body["run_state"] = RunState.PAUSED.value
            body["resume"] = ClaimedOut.of(paused.resume)
        return cls(**body)


class RunPausedOut(Answer):
    """The answer to a register with `suspend` (docs/api.md, "One call to pause: `POST /runs` with `suspend`"):
    the run as it is now, paused at revision 2 on the pause, and the pause as a suspend answers it."""

    run: RunOut
    suspension: PausedOut

    @classmethod
    def of_paused(cls, paused: Any, callback_url: str | None = None) -> Self:
        """The answer to a register and its pause (services.Paused)."""
        run = RunOut.of(paused.suspension.run).model_copy(update={"suspension_id": paused.suspension.id})
        return cls(run=run, suspension=PausedOut.of_paused(paused, callback_url))


class RegisteredOut(RootModel[RunOut | RunPausedOut]):
    """The answer to `POST /runs`: the run; with `suspend`, `{run, suspension}`."""


class EarlyOut(Answer):
    """A kept early result (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause")."""

    run_id: UUID
    call_id: str
    digest: str = doc("SHA-256 of the canonical JSON of `{run_id, call_id, content}`.")
    expires_at: Moment
    fresh: bool = doc("False when this was the same result again.")
    resume: ClaimedOut | MISSING = absent(
        "When this was the last result a live pause waited for: the one-shot resume's own answer."
    )

    @classmethod
    def of(cls, kept: Any) -> Self:
        """A kept early result (services.Kept); with the resume it completed, when it was the last one missing."""
        early = kept.early
        resume = {} if kept.resume is None else {"resume": ClaimedOut.of(kept.resume)}
        return cls(
            run_id=early.run_id,
            call_id=early.call_id,
            digest=early.digest,
            expires_at=early.expires_at,
            fresh=kept.fresh,
            **resume,
        )


# -- decisions and approvals --------------------------------------------------------------------


class DecisionHeadOut(Answer):
    """What a denial and a vote answer alike: the decision, the pause, where its run is, freshness."""

    decision: str
    run_id: UUID
    suspension_id: UUID
    run_state: str
    run_revision: int
    fresh: bool = doc("False when this was the same approver's identical decision again.")

    @staticmethod
    def head(decision: str, answer: Any) -> dict[str, Any]:
        return {
            "decision": decision,
            "run_id": answer.run.id,
            "suspension_id": answer.suspension_id,
            "run_state": answer.run.state,
            "run_revision": answer.run.revision,
            "fresh": answer.fresh,
        }


class DeniedOut(DecisionHeadOut):
    reason: str

    @classmethod
    def of(cls, denied: Any) -> Self:
        """A denial (services.Denied)."""
        return cls(**cls.head("deny", denied), reason=denied.reason)


class VotedOut(DecisionHeadOut):
    """A vote short of the approval's quorum (202): recorded; the run still waits at the same revision."""

    votes: int = doc("Distinct approvers who approved so far.")
    quorum: int = doc("Votes needed to admit the run.")
    voters: list[str]

    @classmethod
    def of(cls, voted: Any) -> Self:
        """A vote short of the quorum (services.Voted)."""
        return cls(**cls.head("approve", voted), votes=voted.votes, quorum=voted.quorum, voters=voted.voters)


class Decision(RootModel[ClaimedOut | DeniedOut]):
    """The answer to a decision that did the work: the claim an approve or a respond made, or the denial."""


class ReplayedDecision(RootModel[ClaimedOut | DeniedOut | VotedOut]):
    """The answer to the same decision again: as first answered, a vote short of the quorum included."""


class AskedCallOut(Answer):
    """A pending call as an approver sees it: with its schema and whether it may be edited."""

    id: str
    name: str
    arguments: str = doc("The arguments as the model wrote them: a string holding JSON.")
    editable: bool = doc("May an approver edit the arguments?")
    arguments_schema: AsGiven[Any] | None = doc("JSON Schema the edited arguments must match.")

    @classmethod
    def of(cls, call: Mapping[str, Any]) -> Self:
        return cls(
            id=call["id"],
            name=call["name"],
            arguments=call["arguments"],
            editable=call.get("editable", False),
            arguments_schema=call.get("arguments_schema"),
        )


class FinalCallOut(Answer):
    id: str
    name: str
    arguments: str = doc("The arguments the run was admitted with: a string holding JSON.")
    edited: bool
    original_digest: str = doc("SHA-256 (hex) of the arguments as asked, UTF-8 bytes.")


class PolicyOut(Answer):
    quorum: int
    exclude_requester: bool
    on_expiry: AsGiven[Any] = doc('"expire", "deny", or {"escalate": {"extend_seconds": n}}.')
    escalation: AsGiven[list[Any]] | MISSING = absent(
        "The escalation chain's steps `{after_seconds, notify: {scopes, groups, people}}`, when the pause has one."
    )


class FloorAppliedOut(Answer):
    scopes: list[str] = doc("The scopes of the approval floors that covered the pause, top first.")
    require_linked_person: bool = doc("Only a principal of a person (a user, or a token linked to one) may decide.")


class VoteOut(Answer):
    voter: str
    cast_at: Moment
    note: str
    acting_for: str | None = doc("A delegate's vote: the person it counts for (`user:<username>`); else null.")

    @classmethod
    def of(cls, vote: ApprovalVote) -> Self:
        return cls(voter=vote.voter, cast_at=vote.cast_at, note=vote.note, acting_for=vote.acting_for or None)


class ApprovalOut(Answer):
    """One approval, pending or decided, with what was asked, its policy and votes, and where its run is now."""

    suspension_id: UUID
    run_id: UUID
    scope: str
    agent_id: str
    status: Literal["pending", "approved", "denied", "responded", "expired", "cancelled"]
    calls: list[AskedCallOut] = doc("The tool calls that were asked, kept after the pause is gone.")
    policy: AsGiven[PolicyOut] = doc("The policy in force: as asked, raised to the scope's approval floors.")
    floor: AsGiven[FloorAppliedOut] | None = doc("The approval floors that covered the pause; null if none.")
    votes: list[VoteOut] = doc("Approve votes so far, in order.")
    # What was decided: the calls as admitted (an approve) or the answer in words (a respond).
    final_calls: AsGiven[list[FinalCallOut]] | None = doc("Approved: the calls as admitted.")
    response: str | None = doc("Responded: the approver's answer in words.")
    escalated_at: Moment | None = doc("When the deadline was moved by escalation.")
    requested_by: str = doc("The principal that stored the pause.")
    created_at: Moment
    expires_at: Moment | None
    decided_by: str = doc("Empty while pending and when nobody answered.")
    acting_for: str | None = doc("A delegate's decision: the person it was made for (`user:<username>`); else null.")
    note: str = doc("The approver's note, or the reason of a denial.")
    resolved_at: Moment | None
    admission_id: UUID | None = doc("The admission an approval created.")
    run_state: str | None
    version: VersionOut | None = doc("The claim version to decide with; null once decided.")
    tags: list[str] = doc("The pause's tags (its run's, then its own), kept after the pause is gone.")

    @classmethod
    def of(
        cls, record: Approval, run: Run | None, admission: Admission | None, votes: Sequence[ApprovalVote] = ()
    ) -> Self:
        calls = json.loads(record.pending) if record.pending else []
        version = None
        if record.status == ApprovalStatus.PENDING and run is not None and run.state == RunState.PAUSED:
            version = VersionOut.of(record.run_id, record.suspension_id, run.revision)
        return cls(
            suspension_id=record.suspension_id,
            run_id=record.run_id,
            scope=record.scope,
            agent_id=record.agent_id,
            status=record.status,
            calls=[AskedCallOut.of(c) for c in calls],
            policy=record.policy,
            floor=record.floor,
            votes=[VoteOut.of(v) for v in votes],
            final_calls=json.loads(record.final_calls) if record.final_calls else None,
            response=record.response or None,
            escalated_at=record.escalated_at,
            requested_by=record.requested_by,
            created_at=record.created_at,
            expires_at=record.expires_at,
            decided_by=record.decided_by,
            acting_for=record.acting_for or None,
            note=record.note,
            resolved_at=record.resolved_at,
            admission_id=admission.id if admission is not None else None,
            run_state=run.state if run is not None else None,
            version=version,
            tags=list(record.tags),
        )


# -- expiries, closures and flow waits ----------------------------------------------------------


class ExpiryReceiptOut(Answer):
    """Proof that a pause, or an admitted continuation, expired before execution started (T9)."""

    run_id: UUID
    suspension_id: UUID
    scope: str
    request_digest: str = doc("The admission's request digest; empty if nothing was admitted.")
    run_revision: int
    expired_at: Moment
    event_id: int | None
    digest: str
    # Integrity only: recomputed from what is stored; it grants nothing.
    valid: bool = doc("The digest recomputed from what is stored matches.")

    @classmethod
    def of(cls, receipt: ExpiryReceipt) -> Self:
        valid = (
            digests.expiry_digest(
                run_id=receipt.run_id,
                suspension_id=receipt.suspension_id,
                scope=receipt.scope,
                request_digest=receipt.request_digest,
                run_revision=receipt.run_revision,
                expired_at=receipt.expired_at,
            )
            == receipt.digest
        )
        return cls(
            run_id=receipt.run_id,
            suspension_id=receipt.suspension_id,
            scope=receipt.scope,
            request_digest=receipt.request_digest,
            run_revision=receipt.run_revision,
            expired_at=receipt.expired_at,
            event_id=receipt.event_id,
            digest=receipt.digest,
            valid=valid,
        )


class ClosureReceiptOut(Answer):
    """Proof that an uncertain start was closed as incomplete by an operator (T10)."""

    id: UUID
    run_id: UUID
    suspension_id: UUID
    scope: str
    request: AsGiven[dict[str, Any]] = doc("The closure request as retained, with scope and actor.")
    request_digest: str
    run_revision: int
    event_id: int | None
    actor: str
    closed_at: Moment
    digest: str
    valid: bool
    fresh: bool

    @classmethod
    def of(cls, receipt: ClosureReceipt, *, fresh: bool) -> Self:
        # Integrity only: recomputed from what is stored; it grants nothing.
        valid = (
            digests.sha256_hex(receipt.request) == receipt.request_digest
            and digests.closure_digest(receipt) == receipt.digest
        )
        return cls(
            id=receipt.id,
            run_id=receipt.run_id,
            suspension_id=receipt.suspension_id,
            scope=receipt.scope,
            request=json.loads(receipt.request),
            request_digest=receipt.request_digest,
            run_revision=receipt.run_revision,
            event_id=receipt.event_id,
            actor=receipt.actor,
            closed_at=receipt.closed_at,
            digest=receipt.digest,
            valid=valid,
            fresh=fresh,
        )


class ParkedWaitOut(Answer):
    """A parked flow wait: embed `correlation_id` in the dispatch; the bus resumes with it."""

    correlation_id: str
    store_key: str
    user_id: str
    scope: str
    run_id: UUID
    suspension_id: UUID
    run_revision: int
    reason: str
    expires_at: Moment | None

    @classmethod
    def of(cls, parked: Any) -> Self:
        """A parked flow wait (services.ParkedWait)."""
        suspension = parked.suspension
        return cls(
            correlation_id=parked.wait.correlation_id,
            store_key=parked.wait.store_key,
            user_id=parked.user_id,
            scope=parked.wait.scope,
            run_id=suspension.run.id,
            suspension_id=suspension.id,
            run_revision=suspension.run.revision,
            reason=suspension.reason,
            expires_at=suspension.expires_at,
        )


class DiscoveryOut(Answer):
    """A page of the runs the bus must answer or recover."""

    runs: list[UUID]
    next: UUID | None = doc("Pass as `after` for the next page; null on the last.")


# -- errors (docs/api.md, "6. Error codes") -----------------------------------------------------


class Problem(Answer):
    """Every error, as application/problem+json (RFC 9457); suspensions/problems.py renders it.

    The fields below are the ones the docs name; a code may carry more (`id`
    and `first_status` of `deleted_since`, the floors of a refusal below
    them), written after them as the error gave them.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    type: str = doc("`https://suspensions.dev/errors/<code>`; `about:blank` for 405, 406, 429.")
    title: str = doc("The code's fixed title.")
    status: int = doc("The HTTP status; the same code always has the same status.")
    detail: str = doc("What went wrong in this request.")
    code: str = doc('The stable error code (docs/api.md, "6. Error codes"); branch on this.')
    errors: AsGiven[Any] | MISSING = absent(
        "`invalid_request`: the field errors, keyed by field; `arguments_invalid`: a list of "
        "`{call_id, path, message}`."
    )
    call_id: AsGiven[str] | MISSING = absent("`not_editable`: the call that may not be edited.")
    request_digest: AsGiven[str] | MISSING = absent(
        "`admission_conflict`, `closure_conflict`: the digest of your request."
    )
    admitted_digest: AsGiven[str] | MISSING = absent(
        "`admission_conflict`: the digest of the request that claimed the pause."
    )
    closed_digest: AsGiven[str] | MISSING = absent("`closure_conflict`: the digest of the request that closed the run.")
    receipt: AsGiven[StartReceiptOut] | MISSING = absent("`resume_already_started`: the start receipt.")
    engine_version: AsGiven[str] | MISSING = absent("`version_drift`: the version you sent.")
    pause_engine_version: AsGiven[str] | MISSING = absent("`version_drift`: the version the pause was stored with.")
    version: AsGiven[VersionOut] | MISSING = absent("`version_conflict` of a closure: the version to close.")
    unknown: AsGiven[list[str]] | MISSING = absent("`results_mismatch`: call ids no pending call has.")
    missing: AsGiven[list[str]] | MISSING = absent("`results_mismatch`: pending call ids without a result.")

    @classmethod
    def of(cls, error: Any) -> Self:
        """The problem of a ServiceError: its code's type, title and status, its detail, and what it carries."""
        return cls(
            type=f"https://suspensions.dev/errors/{error.code}",
            title=error.title,
            status=error.status,
            detail=error.detail,
            code=error.code,
            **error.extra,
        )

    def wire(self) -> dict[str, Any]:
        # What an error carries is written by the JSON encoder of the response, as it always was.
        return self.model_dump()
