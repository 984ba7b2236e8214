"""The claiming doors: approvals, agent replies, admissions and their start (docs/api.md §7.3, §7.4)."""

from drf_spectacular.utils import OpenApiExample

from . import samples as v
from .base import Doc, answer, ex, refusal

CLAIM_CONFLICTS = ("version_conflict", "admission_conflict", "not_suspended", "wrong_gate")

OPERATIONS = {
    "list_approvals": Doc(
        tag="approvals",
        role="approver or auditor",
        summary="List pending approvals",
        description="Approval pauses still waiting, soonest deadline first; the same rows and filters as "
        "`GET /suspensions` (for example `?tool=send_refund`).",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "get_approval": Doc(
        tag="approvals",
        role="approver or auditor",
        summary="Read an approval",
        description="One approval, pending or decided, with the calls that were asked (each `arguments` a "
        "string holding JSON). While `status` is `pending`, `version` is the claim version to decide with; "
        "`null` afterwards.",
        errors={403: ("forbidden",), 404: ("not_found",)},
    ),
    "link_approval": Doc(
        tag="approvals",
        role="engine",
        summary="Get a sealed link to an approval's page",
        description="For the agent that paused to hand its person (an MCP URL-mode elicitation, a chat message): "
        "a URL of the console page where a signed-in approver of the scope decides, its state sealed by the "
        "service. The link is single use through the decision: once the approval is decided, or the run moved "
        "on, it is refused, and so is a tampered or expired one. Writes nothing; each call mints a fresh link.",
        errors={
            403: ("forbidden", "not_an_approval"),
            404: ("not_found",),
            409: ("not_suspended",),
            410: ("suspension_expired",),
        },
    ),
    "decide_approval": Doc(
        tag="approvals",
        role="approver",
        summary="Approve or deny an approval (T4, T6)",
        description="`decision` is `approve`, `deny` or `respond`; `reason` is kept as the note of an approval "
        "and is required for a denial. Approve answers 201 with an admission receipt: the engine then starts "
        "it (`POST /admissions/{id}/start`); `respond` admits the run with your `response` instead of the "
        "calls. Deny fails the run with `rejected: <reason>`. Under a quorum policy, a vote short of the "
        "quorum answers 202 with `{votes, quorum}`. The same approver's identical decision again answers 200 "
        "with `fresh: false`; another approver's is a conflict.",
        errors={
            400: ("invalid_request",),
            403: (
                "forbidden",
                "not_an_approval",
                "separation_of_duties",
                "not_editable",
                "person_required",
                "not_delegated",
            ),
            404: ("not_found",),
            409: (*CLAIM_CONFLICTS, "vote_mismatch"),
            410: ("suspension_expired",),
            413: ("request_too_large",),
            422: ("arguments_invalid",),
        },
    ),
    "decide_approvals": Doc(
        tag="approvals",
        role="approver",
        summary="Decide a list of approvals (T4, T6)",
        description="`items`: 1 to 100 decisions, each a single decide's body plus its `approval_id`, each "
        "approval at most once. Each item is decided on its own, in order, exactly as "
        "`POST /approvals/{approval_id}/decide` would decide it (its own claim and transaction); the answer "
        "lists each item's `status` and `body` as that call would have answered, a refusal's problem "
        "included. The same list again replays what was done (200, `fresh: false`). A malformed list is one "
        "400 whose `errors` name each fault's path (`items[3].decision`), and decides nothing.",
        errors={400: ("invalid_request",), 413: ("request_too_large",)},
    ),
    "admit_agent_reply": Doc(
        tag="agent replies",
        role="bus",
        summary="Admit an agent's reply (T4)",
        description="Claims an `agent_reply` pause with the reply. `input` is a **string holding JSON** "
        '(for example `"{\\"answer\\": 12}"`), kept byte for byte; `reply_with` must equal the pending '
        "call's. Answers 201 with the admission receipt; the engine then starts it. The identical request "
        "again answers 200 with `fresh: false`.",
        errors={
            400: ("invalid_request",),
            403: ("forbidden", "not_an_agent_reply"),
            404: ("not_found",),
            409: (*CLAIM_CONFLICTS, "reply_mismatch"),
            410: ("suspension_expired",),
            413: ("input_too_large", "request_too_large"),
        },
    ),
    "list_agent_reply_runs": Doc(
        tag="agent replies",
        role="bus",
        summary="Find the runs waiting for an agent reply",
        description="Runs in exactly the scopes where the caller holds `bus` that hold an `agent_reply` pause, "
        "or that run an admitted reply whose pause a start consumed; by run id. Page with `after` (the "
        "answer's `next`) and `limit` (1..256, never clamped).",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "list_admissions": Doc(
        tag="admissions",
        role="engine",
        summary="List admitted work",
        description="Admissions in the scopes where the caller holds `engine`, oldest `admitted_at` first. "
        "`?state=admitted` is the engine's work queue: start each one.",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "start_admission": Doc(
        tag="admissions",
        role="engine",
        summary="Start admitted work (T5)",
        description="The single grant to execute: the first start answers 201 with the pause (continuation, "
        "pending calls) and the admitted `input`, a string. A second start is `409 resume_already_started` "
        "with the start receipt and never the pause: an engine that lost the first answer must treat the "
        "execution as uncertain. No body, or only the version-drift guard: `engine_version` (when the pause "
        "holds another one: `409 version_drift`) and `accept_drift` (go on; the event records both versions).",
        errors={
            400: ("invalid_request",),
            403: ("forbidden",),
            404: ("not_found",),
            409: ("resume_already_started", "invalid_state", "version_drift"),
            410: ("suspension_expired",),
        },
    ),
    "list_run_admissions": Doc(
        tag="admissions",
        role="any role",
        summary="List a run's admissions",
        description="Every claim of the run, oldest first, each with its `state`.",
        errors={400: ("invalid_request",), 404: ("not_found",)},
    ),
    "get_latest_admission": Doc(
        tag="admissions",
        role="any role",
        summary="Read a run's latest admission, for recovery",
        description="The admission with the greatest `claimed_revision`, its `state` and its `start` receipt "
        "(or `null`). `admitted` with no start: start it; `started`: if this engine did not execute, ask an "
        "operator to close it; `done`, `expired`, `cancelled`, `closed`: nothing to do. 404 when the run has "
        "no admission.",
        errors={404: ("not_found",)},
    ),
}

# Approval policies (docs/policies.md): their decide examples (respond, edited calls, votes) go in this
# list, which EXAMPLES["decide_approval"] includes; the suspend ones in runs.SUSPEND_POLICY_EXAMPLES.
DECIDE_POLICY_EXAMPLES: list[OpenApiExample] = [
    ex(
        "approve with edits",
        {"version": v.version(), "decision": "approve", "calls": [{"id": "call_9", "arguments": '{"amount": 450}'}]},
        description="Edits an `editable` call; the arguments must match its `arguments_schema` (422 otherwise).",
    ),
    ex(
        "respond",
        {"version": v.version(), "decision": "respond", "response": "Refund 450 only; offer a voucher for the rest."},
        description="Admits the run with the approver's words as its input instead of running the tools.",
    ),
    answer(
        "a vote short of the quorum",
        {
            "decision": "approve",
            "run_id": v.RUN_ID,
            "suspension_id": v.SUSPENSION_ID,
            "run_state": "paused",
            "run_revision": 2,
            "votes": 1,
            "quorum": 2,
            "voters": [v.APPROVER],
            "fresh": True,
        },
        202,
    ),
]

# A second approval of a list's answer, decided by someone else first.
OTHER_APPROVAL = "01a22e4f-7c1d-7e2f-8a3b-4c5d6e7f8a90"
APPROVED = v.claimed(v.admission("approval", actor=v.APPROVER))
DENIED = {
    "decision": "deny",
    "run_id": v.RUN_ID,
    "suspension_id": v.SUSPENSION_ID,
    "run_state": "failed",
    "run_revision": 3,
    "reason": "not allowed",
    "fresh": True,
}
APPROVAL = {
    "suspension_id": v.SUSPENSION_ID,
    "run_id": v.RUN_ID,
    "scope": "demo",
    "agent_id": "support-agent",
    "status": "pending",
    "calls": [{**v.APPROVAL_CALL, "editable": False, "arguments_schema": None}],
    "policy": {"quorum": 1, "exclude_requester": True, "on_expiry": "expire"},
    "floor": None,
    "votes": [],
    "final_calls": None,
    "response": None,
    "escalated_at": None,
    "requested_by": v.ENGINE,
    "created_at": v.AT,
    "expires_at": v.LATER,
    "decided_by": "",
    "acting_for": None,
    "note": "",
    "resolved_at": None,
    "admission_id": None,
    "run_state": "paused",
    "version": v.version(),
    "tags": ["team:support"],
}
FIRST_START = v.claimed(
    v.admission("approval", actor=v.APPROVER, fresh=False),
    start=v.START,
    suspension=v.pause(v.APPROVAL_CALL, reason="approval"),
    input='{"approver":"token:demo:approver","calls":["call_9"],"decision":"approve","note":"within policy"}',
)

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "list_approvals": [answer("a page", v.pause_row(), 200)],
    "get_approval": [answer("pending", APPROVAL, 200)],
    "link_approval": [
        answer(
            "a link",
            {
                "approval_id": v.SUSPENSION_ID,
                "run_id": v.RUN_ID,
                "url": "https://suspensions.example.com/console/open/gAAAAABpN0Zk...",
                "expires_at": v.LATER,
            },
            200,
        )
    ],
    "decide_approval": [
        ex("approve", {"version": v.version(), "decision": "approve", "reason": "within policy"}),
        ex("deny", {"version": v.version(), "decision": "deny", "reason": "not allowed"}),
        *DECIDE_POLICY_EXAMPLES,
        answer("approved", APPROVED, 201),
        answer("denied", DENIED, 201, summary="denied (the same 201 status, another shape)"),
    ],
    "decide_approvals": [
        ex(
            "approve one",
            {"items": [{"approval_id": v.SUSPENSION_ID, "version": v.version(), "decision": "approve"}]},
            description="Add an item per approval; a denial carries its `reason`, as in a single decide.",
        ),
        answer(
            "one decided, one refused",
            {
                "results": [
                    {"approval_id": v.SUSPENSION_ID, "status": 201, "body": APPROVED},
                    {
                        "approval_id": OTHER_APPROVAL,
                        "status": 409,
                        "body": v.problem(
                            409,
                            "not_suspended",
                            "The run is not paused on that suspension",
                            f"pause {OTHER_APPROVAL} was already decided",
                        ),
                    },
                ]
            },
            200,
        ),
    ],
    "admit_agent_reply": [
        ex("a reply", {"version": v.version(), "input": '{"answer": 12}', "reply_with": "q-7f3a"}),
        answer("admitted", v.claimed(v.admission("agent_reply", actor=v.BUS)), 201),
        answer("replay", v.claimed(v.admission("agent_reply", actor=v.BUS, fresh=False), fresh=False), 200),
    ],
    "list_agent_reply_runs": [answer("one page", {"runs": [v.RUN_ID], "next": None}, 200)],
    "list_admissions": [answer("the queue", v.admission("approval", fresh=False, state="admitted"), 200)],
    "start_admission": [
        ex("from the engine that paused", {"engine_version": "engine-2.4.1"}),
        ex("accepting a drift", {"engine_version": "engine-2.5.0", "accept_drift": True}),
        answer("first start", FIRST_START, 201),
    ],
    "list_run_admissions": [answer("history", v.admission(fresh=False, state="done"), 200)],
    "get_latest_admission": [
        answer(
            "admitted, not started",
            {**v.admission("agent_reply", actor=v.BUS, fresh=False), "state": "admitted", "start": None},
            200,
        )
    ],
}

REFUSALS: dict[str, list[OpenApiExample]] = {
    "decide_approval": [
        refusal(
            "deny without a reason",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                "The request has invalid fields.",
                errors={"reason": ["A denial needs a reason."]},
            ),
        ),
    ],
    "decide_approvals": [
        refusal(
            "a malformed item",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                'items[1].decision: "maybe" is not a valid choice. Nothing was decided.',
                errors={"items[1].decision": ['"maybe" is not a valid choice.']},
            ),
        ),
    ],
    "admit_agent_reply": [
        refusal(
            "another question",
            v.problem(
                409,
                "reply_mismatch",
                "reply_with does not match the pending call",
                "reply_with does not match the pending call's ('q-7f3a')",
            ),
        )
    ],
    "start_admission": [
        refusal(
            "started already",
            v.problem(
                409,
                "resume_already_started",
                "This admission was already started",
                "This admission was already started",
                receipt=v.START,
            ),
        )
    ],
}
