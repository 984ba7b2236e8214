"""The one table of error codes (docs/api.md, "6. Error codes"). Services raise these; one handler renders them."""

from typing import Any


class ServiceError(Exception):
    status = 400
    code = "invalid_request"
    title = "Invalid request"

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        self.detail = detail or self.title
        self.extra = extra
        super().__init__(self.detail)


class InvalidRequest(ServiceError):
    status, code, title = 400, "invalid_request", "Invalid request"

    def __init__(self, detail: str | None = None, errors: dict[str, Any] | None = None, **extra: Any) -> None:
        super().__init__(detail, **extra)
        if errors:
            self.extra["errors"] = errors


class BelowApprovalFloor(ServiceError):
    status, code, title = 400, "below_approval_floor", "The pause asks for less than its scope's approval floor"


class UnusableSchema(InvalidRequest):
    """A call's arguments_schema cannot be applied to an edit: 400, never a 500 (issue 32).

    A pause stored before the schema checks may hold a schema they refuse; any
    edit may cost more than the validation budget (suspensions/schemas.py).
    """


class Unauthenticated(ServiceError):
    status, code, title = 401, "unauthenticated", "Authentication required"


class Forbidden(ServiceError):
    status, code, title = 403, "forbidden", "Your role does not allow this in that scope"


class NotEditable(ServiceError):
    status, code, title = 403, "not_editable", "This call's arguments may not be edited"


class SeparationOfDuties(ServiceError):
    status, code, title = 403, "separation_of_duties", "Whoever asked for this approval may not decide it"


class NotDelegated(ServiceError):
    status, code, title = 403, "not_delegated", "No active delegation lets you act for this person here"


class PersonRequired(ServiceError):
    status, code, title = 403, "person_required", "Only a principal linked to a person may decide this approval"


class RequiresApproval(ServiceError):
    status, code, title = 403, "requires_approval", "This pause waits for an approver's decision"


class AgentReplyOnly(ServiceError):
    status, code, title = 403, "agent_reply_only", "This pause is answered only by an agent reply"


class NotAnApproval(ServiceError):
    status, code, title = 403, "not_an_approval", "This pause is not waiting for an approval"


class NotAnAgentReply(ServiceError):
    status, code, title = 403, "not_an_agent_reply", "This pause is not waiting for an agent reply"


class BadToken(ServiceError):
    status, code, title = 403, "bad_token", "The decision token is missing or wrong"


class NotFound(ServiceError):
    status, code, title = 404, "not_found", "Not found"


class NotSuspended(ServiceError):
    status, code, title = 409, "not_suspended", "The run is not paused on that suspension"


class VersionConflict(ServiceError):
    status, code, title = 409, "version_conflict", "The revision or pause you hold is stale"


class InvalidState(ServiceError):
    status, code, title = 409, "invalid_state", "The run is not in a state that allows this"


class AlreadySuspended(ServiceError):
    status, code, title = 409, "already_suspended", "The run already has a live pause"


class AdmissionConflict(ServiceError):
    status, code, title = 409, "admission_conflict", "A different request already claimed this pause"


class VoteMismatch(ServiceError):
    status, code, title = 409, "vote_mismatch", "This vote approves other calls than the votes before it"


class ReplyMismatch(ServiceError):
    status, code, title = 409, "reply_mismatch", "reply_with does not match the pending call"


class ResumeAlreadyStarted(ServiceError):
    status, code, title = 409, "resume_already_started", "This admission was already started"


class ClosureConflict(ServiceError):
    status, code, title = 409, "closure_conflict", "A different closure request already closed this run"


class WrongGate(ServiceError):
    status, code, title = 409, "wrong_gate", "The correlation nonce does not match the parked wait"


class VersionDrift(ServiceError):
    """The engine that resumes or starts is not the one that paused
    (docs/api.md, "Version drift: `engine_version` and `accept_drift`"); `accept_drift` goes on."""

    status, code, title = 409, "version_drift", "The engine version differs from the one that paused"


class IdempotencyMismatch(ServiceError):
    status, code, title = 409, "idempotency_mismatch", "This Idempotency-Key was used for another request"


class SuspensionExpired(ServiceError):
    status, code, title = 410, "suspension_expired", "The pause passed its deadline"


class DeletedSince(ServiceError):
    """A keyed request replayed after what its first answer names was deleted (docs/api.md, §4)."""

    status, code, title = 410, "deleted_since", "What this key's first answer names has since been deleted"


class InputTooLarge(ServiceError):
    status, code, title = 413, "input_too_large", "The retained input is over 8 MiB"


class RequestTooLarge(ServiceError):
    status, code, title = 413, "request_too_large", "The request body is over 8 MiB plus 64 KiB"


class ResultsMismatch(ServiceError):
    status, code, title = 422, "results_mismatch", "Results do not match the pending calls one to one"


class ArgumentsInvalid(ServiceError):
    status, code, title = 422, "arguments_invalid", "The edited arguments do not match the call's schema"


class Throttled(ServiceError):
    """Over a per-principal allowance (idempotency keys): `retry_after` seconds until room frees up."""

    status, code, title = 429, "throttled", "Too many requests; retry after Retry-After seconds"

    def __init__(self, detail: str | None = None, *, retry_after: int, **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.retry_after = max(1, retry_after)


class Unavailable(ServiceError):
    status, code, title = 503, "unavailable", "The database is unavailable; retry shortly"


class InternalError(ServiceError):
    """Never raised by services: the body handler500 answers under /api/ for a bug (no traceback)."""

    status, code, title = 500, "internal_error", "The server failed to answer; the error is logged"


ALL_ERRORS: tuple[type[ServiceError], ...] = tuple(
    cls for cls in list(globals().values()) if isinstance(cls, type) and issubclass(cls, ServiceError)
)
