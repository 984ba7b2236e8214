"""Python client of the suspensions service (DESIGN §18): sync and async, typed, retrying safely.

from suspensions_client import Client

with Client("http://127.0.0.1:8000", token) as client:
    run = client.register("support-agent")
    pause = client.pause_for_approval(run, [{"id": "c1", "name": "refund", "arguments": {"amount": 900}}], cont)
    outcome = client.wait_for_admission(pause.run_id, pause.id, timeout=600)
    if outcome.admitted:
        started = client.start(outcome)
        client.complete(started)
"""

from . import errors
from ._transport import Retry, RetryNotice
from .aio import AsyncClient
from .claims import Admission, Claimed, Denial, EarlyResult, LatestAdmission, StartReceipt, Vote
from .client import Client
from .errors import (
    AdmissionConflict,
    AgentReplyOnly,
    AlreadySuspended,
    ArgumentsInvalid,
    BadToken,
    BelowApprovalFloor,
    ClientError,
    ClosureConflict,
    Conflict,
    ConnectionLost,
    Forbidden,
    IdempotencyMismatch,
    InputTooLarge,
    InternalError,
    InvalidRequest,
    InvalidState,
    NotAnAgentReply,
    NotAnApproval,
    NotEditable,
    NotFound,
    NotSuspended,
    PersonRequired,
    ReplyMismatch,
    RequestTooLarge,
    RequiresApproval,
    ResultsMismatch,
    ResumeAlreadyStarted,
    SeparationOfDuties,
    StartUncertain,
    SuspensionExpired,
    SuspensionsError,
    Throttled,
    Unauthenticated,
    Unavailable,
    VersionConflict,
    VersionDrift,
    VoteMismatch,
    WrongGate,
)
from .inbox import Inbox
from .loop import Outcome, WaitTimeout
from .models import Event, Page, PendingCall, Run, Suspension, SuspensionSummary, Version
from .records import (
    AgentReplyRuns,
    Approval,
    ApprovalFloor,
    ClosureReceipt,
    DeliveryAttempt,
    ExpiryReceipt,
    NotificationRoute,
    ParkedWait,
    WebhookEndpoint,
    WebhookMessage,
)
from .webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "AdmissionConflict",
    "Admission",
    "AgentReplyOnly",
    "AgentReplyRuns",
    "AlreadySuspended",
    "Approval",
    "ApprovalFloor",
    "ArgumentsInvalid",
    "AsyncClient",
    "BadToken",
    "BelowApprovalFloor",
    "Claimed",
    "Client",
    "ClientError",
    "ClosureConflict",
    "ClosureReceipt",
    "Conflict",
    "ConnectionLost",
    "DeliveryAttempt",
    "Denial",
    "EarlyResult",
    "Event",
    "ExpiryReceipt",
    "Forbidden",
    "Inbox",
    "InputTooLarge",
    "InternalError",
    "InvalidRequest",
    "InvalidState",
    "LatestAdmission",
    "NotAnAgentReply",
    "NotAnApproval",
    "NotEditable",
    "NotFound",
    "NotSuspended",
    "Outcome",
    "Page",
    "NotificationRoute",
    "ParkedWait",
    "PendingCall",
    "PersonRequired",
    "ReplyMismatch",
    "RequestTooLarge",
    "RequiresApproval",
    "ResultsMismatch",
    "ResumeAlreadyStarted",
    "Retry",
    "RetryNotice",
    "Run",
    "SeparationOfDuties",
    "StartReceipt",
    "StartUncertain",
    "Suspension",
    "SuspensionExpired",
    "SuspensionSummary",
    "SuspensionsError",
    "Throttled",
    "Unauthenticated",
    "Unavailable",
    "Version",
    "VersionConflict",
    "VersionDrift",
    "Vote",
    "VoteMismatch",
    "IdempotencyMismatch",
    "WaitTimeout",
    "WebhookEndpoint",
    "WebhookMessage",
    "WebhookVerificationError",
    "WrongGate",
    "errors",
    "verify_webhook",
]
