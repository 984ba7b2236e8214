"""What every operation's documentation holds, and the words of the error codes (docs/api.md §6)."""

from dataclasses import dataclass
from typing import Any

from drf_spectacular.utils import OpenApiExample

# The doors, in the order /api/docs/ shows them; every operation has exactly one.
TAGS = [
    {
        "name": "runs",
        "description": "Register a run, pause it, resume an `external_tool` pause in one call, finish it; "
        "read runs, their events and their live pauses.",
    },
    {
        "name": "approvals",
        "description": "Pauses that wait for a person (`reason: approval`): list, read, approve or deny.",
    },
    {
        "name": "agent replies",
        "description": "Pauses that wait for another agent (`reason: agent_reply`): the bus admits the reply "
        "and finds the runs it must answer.",
    },
    {
        "name": "admissions",
        "description": "Claimed work and its single start: the engine's queue, the start that grants execution, "
        "and recovery after a lost answer.",
    },
    {
        "name": "closures",
        "description": "Runs that ended without finishing: an operator closes an uncertain start as `incomplete`; "
        "expiry receipts prove that admitted work expired before it started.",
    },
    {
        "name": "flow waits",
        "description": "Waits keyed by a correlation id instead of a run id: park a flow's wait, resume it through "
        "dispatch. A wait's scope is `tenant/env`.",
    },
    {
        "name": "approval floors",
        "description": "Per-scope minimums an approval pause cannot go below: quorum, separation of duties, "
        "on_expiry, decisions by people only (operator).",
    },
    {
        "name": "delegations",
        "description": "While someone is away, who decides for them, where and until when; the delegate decides "
        "with `acting_for`.",
    },
    {
        "name": "webhooks",
        "description": "Push instead of polling: endpoints, signed deliveries, tests and redeliveries (operator).",
    },
    {
        "name": "notification routes",
        "description": "Where a scope's approvals are also announced: an email address or a Slack channel, beside "
        "the approvers' own emails (operator).",
    },
    {
        "name": "role mappings",
        "description": "Roles from the identity provider's groups: which group gives which role in which scope "
        "(operator), and the record of every role a sign-in or provisioning call added or removed (auditor).",
    },
    {
        "name": "audit",
        "description": "The tamper-evident trail (auditor): the checkpoints' public key and the export to verify "
        "offline.",
    },
]
TAG_NAMES = frozenset(tag["name"] for tag in TAGS)

# docs/api.md §6, "meaning": what the caller reads next to each code.
MEANING = {
    "invalid_request": "a field, the JSON, a filter, a cursor or `page_size` is wrong; details under `errors`",
    "unauthenticated": "no token, or an unknown, revoked or expired one",
    "forbidden": "your role is missing in that scope",
    "requires_approval": "the pause is an `approval`: wait for the decision, then start the admission",
    "agent_reply_only": "the pause is an `agent_reply`: the bus admits the reply",
    "not_an_approval": "the pause is not an `approval`",
    "not_an_agent_reply": "the pause is not an `agent_reply`",
    "bad_token": "the flow wait's decision token is missing or wrong",
    "not_found": "no such row in your scopes",
    "not_suspended": "the run is not paused on that pause and nothing of yours claimed it",
    "version_conflict": "the revision, version or digest you hold is stale",
    "invalid_state": "the run (or webhook, or message) is not in a state that allows this",
    "already_suspended": "the run already has a live pause (or the flow key a live wait)",
    "admission_conflict": "a different request already claimed this pause; names both digests",
    "reply_mismatch": "`reply_with` is not the pending call's",
    "resume_already_started": "this admission was started already; carries the start receipt",
    "idempotency_mismatch": "this `Idempotency-Key` was first used for another request (body, path or method); "
    "names it",
    "closure_conflict": "a different closure request already closed this run; names both digests",
    "wrong_gate": "a flow wait is resumed only by its correlation id, through `/dispatch/resume`",
    "suspension_expired": "the pause passed its deadline, whether or not the sweep has expired the run yet",
    "deleted_since": "a replayed `Idempotency-Key`: its first request succeeded, and what it names was deleted "
    "since; carries `id` and `first_status`",
    "throttled": "a new `Idempotency-Key` past the principal's allowance of keys younger than 24 hours, or an early "
    "result past its run's allowance; carries `Retry-After`",
    "input_too_large": "the retained input is over 8 MiB",
    "request_too_large": "the body is over 8 MiB + 64 KiB",
    "results_mismatch": "results do not match the pending calls one to one",
    "version_drift": "the pause was stored by another `engine_version`; names both; send `accept_drift: true` to go on",
    "below_approval_floor": "the pause's `on_expiry` is one its scope's approval floors do not allow; names them",
    "person_required": "the approval's floor lets only a user, or a token linked to one, decide",
    "separation_of_duties": "whoever stored the pause may not decide it (the policy's `exclude_requester`), nor anyone "
    "acting for them",
    "not_delegated": "`acting_for` names someone you hold no active delegation from in this approval's scope",
    "not_editable": "`calls` edits a call that is not `editable`",
    "vote_mismatch": "this vote approves other calls than the votes before it",
    "arguments_invalid": "edited arguments do not match the call's `arguments_schema`; errors name call and path",
    "unavailable": "the database is down; retry the identical request after `Retry-After` seconds",
}

# Answers that any operation may give whatever it does.
ALWAYS = {401: ("unauthenticated",), 503: ("unavailable",)}
# A console session (cookie) of a user who is not active staff is refused on every operation,
# whatever its role: the only 403 of an operation open to every role.
SESSION_ONLY = "`forbidden`: a console session of a user without active staff access (a token with any role may call)."


@dataclass(frozen=True)
class Doc:
    """One operation's documentation; `errors` maps each status it can answer to the codes it uses."""

    tag: str
    role: str
    summary: str
    description: str
    errors: dict[int, tuple[str, ...]]
    # No token is read (a callback URL is its own capability): never 401 or 403.
    public: bool = False


def ex(name: str, value: Any, summary: str = "", **options: Any) -> OpenApiExample:
    """A request example (sent as it is, ids aside: see samples.py)."""
    return OpenApiExample(name, value=value, summary=summary or name, request_only=True, **options)


def answer(name: str, value: Any, status: int, summary: str = "") -> OpenApiExample:
    """A 2xx response example."""
    return OpenApiExample(name, value=value, summary=summary or name, response_only=True, status_codes=[str(status)])


def refusal(name: str, value: Any, summary: str = "") -> OpenApiExample:
    """A problem+json example, shown under the status of its problem."""
    return OpenApiExample(name, value=value, summary=summary or name, status_codes=[str(value["status"])])
