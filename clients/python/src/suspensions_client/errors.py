"""One exception class per error code of the service (docs/api.md §6), grouped by HTTP status.

Every refusal the server sends is an RFC 9457 problem with a stable `code`.
`error_from(status, body, headers)` picks the class for the code; a code this
client does not know yet maps to the class of its status (a new 409 code is
still a `Conflict`), and a body that is not a problem (a proxy's HTML page)
maps the same way with an empty code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ClientError(Exception):
    """Root of everything this package raises on purpose."""


class ConnectionLost(ClientError):
    """No answer came, after every attempt the retry policy allowed (the transport error is `__cause__`).

    `maybe_applied` is true when a request reached the server and its answer was
    lost: the write may have happened. Claims replay and creates carry an
    `Idempotency-Key`, so their retries settle that; this is raised when every
    attempt allowed was lost, or for the writes a resend cannot settle (deleting
    an approval floor).
    """

    def __init__(self, message: str, *, maybe_applied: bool, attempts: int) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied
        self.attempts = attempts


class SuspensionsError(ClientError):
    """A problem answer: `status`, `code`, `title`, `detail`, and the whole body as `problem`."""

    status = 0
    code = ""

    def __init__(self, status: int, problem: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        self.status = status
        self.problem: dict[str, Any] = dict(problem)
        self.code = str(problem.get("code", ""))
        self.title = str(problem.get("title", ""))
        self.detail = str(problem.get("detail", ""))
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        super().__init__(f"{status} {self.code or 'error'}: {self.detail or self.title}")

    @property
    def errors(self) -> dict[str, Any] | list[Any]:
        """Field errors: keyed by field (`invalid_request`), or a list naming call and path (`arguments_invalid`)."""
        errors = self.problem.get("errors")
        return errors if isinstance(errors, (dict, list)) else {}

    @property
    def request_id(self) -> str | None:
        """The `X-Request-ID` of the answer: quote it when reporting a problem."""
        return self.headers.get("x-request-id")

    @property
    def retry_after(self) -> float | None:
        """`Retry-After` in seconds, when the answer carried one (503, 429)."""
        return retry_after_seconds(self.headers.get("retry-after"))


def retry_after_seconds(value: str | None) -> float | None:
    """The delta-seconds form of Retry-After (the one this service sends); None otherwise."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds >= 0 else None


# -- by status: what an unknown code maps to ------------------------------------------------


class BadRequest(SuspensionsError):
    status = 400


class AuthenticationFailed(SuspensionsError):
    status = 401


class PermissionDenied(SuspensionsError):
    status = 403


class NotFoundError(SuspensionsError):
    status = 404


class MethodNotAllowed(SuspensionsError):
    status, code = 405, "method_not_allowed"


class NotAcceptable(SuspensionsError):
    status, code = 406, "not_acceptable"


class Conflict(SuspensionsError):
    status = 409


class Gone(SuspensionsError):
    status = 410


class PayloadTooLarge(SuspensionsError):
    status = 413


class Unprocessable(SuspensionsError):
    status = 422


class TooManyRequests(SuspensionsError):
    status = 429


class ServerError(SuspensionsError):
    status = 500


# -- one class per code ---------------------------------------------------------------------


class InvalidRequest(BadRequest):
    code = "invalid_request"


class BelowApprovalFloor(BadRequest):
    """The pause names an on_expiry its scope's approval floors do not allow (`floors` in the problem)."""

    code = "below_approval_floor"


class Unauthenticated(AuthenticationFailed):
    code = "unauthenticated"


class Forbidden(PermissionDenied):
    code = "forbidden"


class RequiresApproval(PermissionDenied):
    code = "requires_approval"


class AgentReplyOnly(PermissionDenied):
    code = "agent_reply_only"


class NotAnApproval(PermissionDenied):
    code = "not_an_approval"


class NotAnAgentReply(PermissionDenied):
    code = "not_an_agent_reply"


class BadToken(PermissionDenied):
    code = "bad_token"


class SeparationOfDuties(PermissionDenied):
    code = "separation_of_duties"


class NotEditable(PermissionDenied):
    code = "not_editable"


class PersonRequired(PermissionDenied):
    """The approval's floor lets only a user, or a token linked to one, decide."""

    code = "person_required"


class NotDelegated(PermissionDenied):
    """`acting_for` names someone who holds no active delegation to you over this approval's scope."""

    code = "not_delegated"


class NotFound(NotFoundError):
    code = "not_found"


class NotSuspended(Conflict):
    code = "not_suspended"


class VersionConflict(Conflict):
    code = "version_conflict"


class InvalidState(Conflict):
    code = "invalid_state"


class AlreadySuspended(Conflict):
    code = "already_suspended"


class AdmissionConflict(Conflict):
    code = "admission_conflict"

    @property
    def request_digest(self) -> str:
        """The digest of the request that was refused (yours)."""
        return str(self.problem.get("request_digest", ""))

    @property
    def admitted_digest(self) -> str:
        """The digest of the request that claimed the pause."""
        return str(self.problem.get("admitted_digest", ""))


class ReplyMismatch(Conflict):
    code = "reply_mismatch"


class ResumeAlreadyStarted(Conflict):
    """The admission was started already; `receipt` is the start receipt (never the pause or input)."""

    code = "resume_already_started"

    @property
    def receipt(self) -> dict[str, Any]:
        receipt = self.problem.get("receipt")
        return receipt if isinstance(receipt, dict) else {}


class StartUncertain(ResumeAlreadyStarted):
    """A start whose first answer was lost: it was granted, and only that answer carried the continuation.

    Raised instead of `ResumeAlreadyStarted` when this client resent a start
    after a lost answer. Execute nothing: the execution is uncertain, and an
    operator closes it (POST /runs/{id}/closures) with this receipt's digest.
    """


class ClosureConflict(Conflict):
    code = "closure_conflict"


class WrongGate(Conflict):
    code = "wrong_gate"


class VoteMismatch(Conflict):
    code = "vote_mismatch"


class VersionDrift(Conflict):
    """The pause was stored by another engine version than the one resuming or starting it
    (docs/api.md, "Version drift: `engine_version` and `accept_drift`").

    Resume with the engine that paused, or send `accept_drift=True` when this
    engine can read the continuation anyway.
    """

    code = "version_drift"

    @property
    def engine_version(self) -> str:
        """The version this request sent."""
        return str(self.problem.get("engine_version", ""))

    @property
    def pause_engine_version(self) -> str:
        """The version the pause was stored with."""
        return str(self.problem.get("pause_engine_version", ""))


class IdempotencyMismatch(Conflict):
    """The `Idempotency-Key` given was first used for another request (`problem["first_request"]` names it)."""

    code = "idempotency_mismatch"


class SuspensionExpired(Gone):
    code = "suspension_expired"


class DeletedSince(Gone):
    """A replayed `Idempotency-Key` whose first request succeeded; what it made (`problem["id"]`) was deleted since."""

    code = "deleted_since"


class InputTooLarge(PayloadTooLarge):
    code = "input_too_large"


class RequestTooLarge(PayloadTooLarge):
    code = "request_too_large"


class ResultsMismatch(Unprocessable):
    code = "results_mismatch"


class ArgumentsInvalid(Unprocessable):
    code = "arguments_invalid"


class Throttled(TooManyRequests):
    code = "throttled"


class InternalError(ServerError):
    code = "internal_error"


class Unavailable(ServerError):
    status, code = 503, "unavailable"


BY_CODE: dict[str, type[SuspensionsError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest,
        BelowApprovalFloor,
        Unauthenticated,
        Forbidden,
        RequiresApproval,
        AgentReplyOnly,
        NotAnApproval,
        NotAnAgentReply,
        BadToken,
        SeparationOfDuties,
        NotEditable,
        PersonRequired,
        NotFound,
        MethodNotAllowed,
        NotAcceptable,
        NotSuspended,
        VersionConflict,
        InvalidState,
        AlreadySuspended,
        AdmissionConflict,
        ReplyMismatch,
        ResumeAlreadyStarted,
        ClosureConflict,
        WrongGate,
        VoteMismatch,
        VersionDrift,
        IdempotencyMismatch,
        SuspensionExpired,
        DeletedSince,
        InputTooLarge,
        RequestTooLarge,
        ResultsMismatch,
        ArgumentsInvalid,
        Throttled,
        InternalError,
        Unavailable,
    )
}

BY_STATUS: dict[int, type[SuspensionsError]] = {
    400: BadRequest,
    401: AuthenticationFailed,
    403: PermissionDenied,
    404: NotFoundError,
    405: MethodNotAllowed,
    406: NotAcceptable,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    422: Unprocessable,
    429: TooManyRequests,
}


def error_class(status: int, code: str) -> type[SuspensionsError]:
    """The class of a code; an unknown code (or one sent with another status) maps by status."""
    known = BY_CODE.get(code)
    if known is not None and known.status == status:
        return known
    if status >= 500:
        return ServerError
    return BY_STATUS.get(status, SuspensionsError)


def error_from(status: int, body: Any, headers: Mapping[str, str] | None = None) -> SuspensionsError:
    """The exception for an error answer; `body` is its parsed JSON, or text when it was not JSON."""
    problem = body if isinstance(body, dict) else {"detail": str(body)[:500]}
    return error_class(status, str(problem.get("code", "")))(status, problem, headers)
