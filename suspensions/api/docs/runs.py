"""The runs door: register, pause, one-shot resume, finish; runs, events and live pauses (docs/api.md §7.2, §7.3)."""

from drf_spectacular.utils import OpenApiExample

from ... import audit
from . import samples as v
from .base import Doc, answer, ex, refusal

STALE = "version_conflict"
# complete and fail: a body to validate, a run to find, a revision to match.
FINISH_ERRORS = {
    400: ("invalid_request",),
    403: ("forbidden",),
    404: ("not_found",),
    409: (STALE, "invalid_state"),
    413: ("request_too_large",),
}

OPERATIONS = {
    "register_run": Doc(
        tag="runs",
        role="engine",
        summary="Register a run (T1), and pause it in the same call",
        description="Creates a run `running` at revision 1. `scope` may be left out when the token holds "
        "`engine` in exactly one scope; otherwise it must lie within the token's scope. With `suspend` (a "
        "suspend's body without `revision`) the run is registered and paused in one transaction, events "
        "`registered` then `suspended`, and the answer is `{run, suspension}`: the run paused at revision 2, "
        "the pause as `POST /runs/{id}/suspend` answers it. A refusal of any field, inside `suspend` too "
        "(named under it: `suspend.reason`), writes nothing: no run, no pause, no event.",
        errors={
            400: ("invalid_request", "below_approval_floor"),
            403: ("forbidden",),
            413: ("input_too_large", "request_too_large"),
        },
    ),
    "list_runs": Doc(
        tag="runs",
        role="any role",
        summary="List runs",
        description="Newest first, cursor-paginated: follow `next` as given. Filters narrow within what the "
        "token sees; an invalid filter value is a 400 naming the field.",
        errors={400: ("invalid_request",)},
    ),
    "get_run": Doc(
        tag="runs",
        role="any role",
        summary="Read a run",
        description="The run with its `state`, `revision` (pass it to suspend, complete, fail, cancel) and "
        "`suspension_id` (its live pause, or `null`). A run outside your scope is a 404.",
        errors={404: ("not_found",)},
    ),
    "list_run_events": Doc(
        tag="runs",
        role="any role",
        summary="List a run's events",
        description="The audit timeline, oldest first: one event per state change, written in the same "
        "transaction. Events are never changed or deleted.",
        errors={400: ("invalid_request",), 404: ("not_found",)},
    ),
    "suspend_run": Doc(
        tag="runs",
        role="engine",
        summary="Pause a run (T2)",
        description="Stores the pause: the `pending` calls and the `continuation` the engine needs to pick up "
        "again. `revision` is the run's current revision. Each call's `arguments` is a **string holding JSON**. "
        "An `agent_reply` pause holds exactly one call, with `reply_with`; other reasons must not use it. "
        "`ttl_seconds` 0 means no deadline (`expires_at: null`); absent means the default (86400 s). "
        "Answers the pause with `run_revision`: the claim version is `{run_id, suspension_id: id, run_revision}`. "
        "A repeated suspend is not a replay (409). An `approval` pause gets its policy raised to the approval "
        'floors of its scope (docs/policies.md, "Floors"); an `on_expiry` they do not allow is a 400. '
        "`engine_version` arms the version-drift guard of its resume or start. `callback: true` (external-tool "
        "pauses) adds a `callback_url`. An external-tool pause whose calls all have early results is resumed at "
        "once: the answer carries `resume`, the one-shot resume's own answer.",
        errors={
            400: ("invalid_request", "below_approval_floor"),
            403: ("forbidden",),
            404: ("not_found",),
            409: (STALE, "already_suspended", "invalid_state"),
            413: ("input_too_large", "request_too_large"),
        },
    ),
    "resume_run": Doc(
        tag="runs",
        role="engine",
        summary="Resume an external-tool pause in one call (T3)",
        description="For `external_tool` pauses only: admits and starts in one transaction. `results` holds "
        "exactly one result per pending call, `{call_id, content}` (any JSON) or `{call_id, error}`. "
        "The first answer (201) carries the continuation and the results in pending order; the identical "
        "request again answers 200 with the receipts only (`fresh: false`). Continue with the admission's "
        "`claimed_revision`.",
        errors={
            400: ("invalid_request",),
            403: ("forbidden", "requires_approval", "agent_reply_only"),
            404: ("not_found",),
            409: (STALE, "admission_conflict", "not_suspended", "wrong_gate", "version_drift"),
            410: ("suspension_expired",),
            413: ("input_too_large", "request_too_large"),
            422: ("results_mismatch",),
        },
    ),
    "keep_early_result": Doc(
        tag="runs",
        role="engine",
        summary="Keep a tool result that came before its pause",
        description="For a tool whose result may arrive before the engine stores the `external_tool` pause that "
        "waits for it: `{call_id, content}` as in a one-shot resume's results, kept for `ttl_seconds` (1 to "
        "604800, default 3600). When a pause is stored whose pending calls all have early results, or when the "
        "last one missing arrives while such a pause is live, that pause is resumed at once as a one-shot resume "
        "with those results in pending order would, and the answer carries that resume's own answer under "
        "`resume`. The same result again answers 200 (`fresh: false`); another content for the call is "
        "`admission_conflict` naming both digests; a finished run is `invalid_state`. A run holds at most 64 "
        "unexpired early results (`429 throttled`, with `Retry-After`) of at most 8 MiB together "
        "(`413 input_too_large`); they are deleted once the run ends.",
        errors={
            400: ("invalid_request",),
            403: ("forbidden",),
            404: ("not_found",),
            409: ("admission_conflict", "invalid_state"),
            413: ("input_too_large", "request_too_large"),
            429: ("throttled",),
        },
    ),
    "resume_by_callback": Doc(
        tag="runs",
        role="anyone with the URL",
        summary="Resume a pause by its callback URL",
        description="The `callback_url` of a pause stored with `callback: true`: POST the one-shot resume body, "
        "with no token. It resumes the pause exactly as `POST /runs/{id}/resume` would (same digests, bounds, "
        "receipts; the identical body again is the replay, 200) and records the actor `callback`. The URL is "
        "the capability: a tampered token, a body naming another pause, or any other method is a 404. Past the "
        "pause's deadline it is `410 suspension_expired`, as the engine's own resume would be.",
        errors={
            400: ("invalid_request",),
            404: ("not_found",),
            409: (STALE, "admission_conflict", "not_suspended", "version_drift"),
            410: ("suspension_expired",),
            413: ("input_too_large", "request_too_large"),
            422: ("results_mismatch",),
        },
        public=True,
    ),
    "complete_run": Doc(
        tag="runs",
        role="engine",
        summary="Complete a run (T8)",
        description="A `running` run at `revision` completes. After a claim, pass the admission's "
        "`claimed_revision`. The same call again is a 409 (the revision is now stale).",
        errors=FINISH_ERRORS,
    ),
    "fail_run": Doc(
        tag="runs",
        role="engine",
        summary="Fail a run (T8)",
        description="A `running` run at `revision` fails with `error` (at most 10,000 characters).",
        errors=FINISH_ERRORS,
    ),
    "cancel_run": Doc(
        tag="runs",
        role="engine",
        summary="Cancel a run (T7)",
        description="A `running` run, or a `paused` one whose pause has not expired, is cancelled at "
        "`revision`; its pause is deleted and a pending approval closed.",
        errors={
            400: ("invalid_request",),
            403: ("forbidden",),
            404: ("not_found",),
            409: (STALE, "invalid_state"),
            410: ("suspension_expired",),
            413: ("request_too_large",),
        },
    ),
    "list_suspensions": Doc(
        tag="runs",
        role="any role",
        summary="List live pauses",
        description="Soonest deadline first (no deadline last). Rows carry the pending calls but no "
        "continuation; filter by `reason`, `tool`, `reply_with`, deadlines and age.",
        errors={400: ("invalid_request",)},
    ),
    "get_suspension": Doc(
        tag="runs",
        role="any role",
        summary="Read a live pause",
        description="The pause with its continuation. A pause that was started, decided or expired is gone "
        "(404); its run and events remain.",
        errors={404: ("not_found",)},
    ),
    "extend_suspension": Doc(
        tag="runs",
        role="operator",
        summary="Give a live pause more time",
        description="Moves the pause's deadline later: by `seconds` from the current deadline, or to `until` "
        "(RFC 3339 with an offset); exactly one, with a `reason`. The revision does not change, so every "
        "version held stays valid. The deadline may be at most ten years from now; an approval's duties apply "
        "(its requester may not extend it under `exclude_requester`; only a person under a floor's "
        "`require_linked_person`). Writes a `deadline_extended` event and announces "
        "`suspension.deadline_extended`. A pause no longer live, without a deadline or past it is "
        "`409 invalid_state`. The same `until` again answers the pause as it is; send an Idempotency-Key "
        "to retry `seconds` safely.",
        errors={
            400: ("invalid_request",),
            403: ("forbidden", "separation_of_duties", "person_required"),
            404: ("not_found",),
            409: ("invalid_state",),
            413: ("request_too_large",),
        },
    ),
}

STALE_REVISION = refusal(
    "stale revision",
    v.problem(409, STALE, "The revision or pause you hold is stale", f"run {v.RUN_ID} is at revision 2, not 1"),
)

# Approval policies (docs/policies.md): their suspend examples (an `approval` policy, `arguments_schema`,
# `editable` calls) go in this list, which EXAMPLES["suspend_run"] includes.
SUSPEND_POLICY_EXAMPLES: list[OpenApiExample] = [
    ex(
        "approval with a policy",
        v.SUSPEND_POLICY,
        description="An editable call with an `arguments_schema`, a quorum of two distinct approvers, the "
        "requester excluded, and one escalation by 30 minutes if nobody answers (docs/policies.md).",
    )
]

EARLY = {"call_id": "call_1", "content": {"rows": 1}}
# A register's `suspend`: a suspend's body without its revision.
FIRST_PAUSE = {key: value for key, value in v.SUSPEND_TOOL.items() if key != "revision"}
KEPT = {"run_id": v.RUN_ID, "call_id": "call_1", "digest": v.REQUEST_DIGEST, "expires_at": v.LATER, "fresh": True}
# A run's first event; its hash is the real one, so a reader can check the example by hand (docs/auditors.md).
REGISTERED = {
    "id": 2,
    "run_id": v.RUN_ID,
    "scope": "demo",
    "kind": "registered",
    "actor": v.ENGINE,
    "revision": 1,
    "data": {"agent_id": "support-agent"},
    "at": v.AT,
}

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "register_run": [
        ex("token scope", {"agent_id": "support-agent", "session_id": "sess-1", "tags": ["team:support"]}),
        ex("a named scope", {"agent_id": "support-agent", "scope": "demo/prod"}),
        ex(
            "registered and paused in one call",
            {"agent_id": "support-agent", "tags": ["team:support"], "suspend": FIRST_PAUSE},
            description="The run's first pause with its register: one request, one transaction.",
        ),
        answer("registered", v.run(), 201),
        answer(
            "registered and paused",
            {
                "run": v.run(state="paused", revision=2, last_reason="external_tool", suspension_id=v.SUSPENSION_ID),
                "suspension": {**v.pause(), "run_revision": 2, "run_state": "paused"},
            },
            201,
        ),
    ],
    "list_runs": [answer("a page", v.run(state="completed", revision=4, last_reason="external_tool"), 200)],
    "get_run": [answer("paused", v.run(state="paused", revision=2, suspension_id=v.SUSPENSION_ID), 200)],
    "list_run_events": [
        answer(
            "registered",
            {**REGISTERED, "prev_hash": audit.GENESIS, "hash": audit.event_hash(audit.GENESIS, REGISTERED)},
            200,
        )
    ],
    "suspend_run": [
        ex("external tool", v.SUSPEND_TOOL, description="The engine runs the tool itself, then resumes in one call."),
        ex("approval", v.SUSPEND_APPROVAL, description="An approver decides; no `ttl_seconds`: the default deadline."),
        ex(
            "agent reply without deadline",
            v.SUSPEND_REPLY,
            description="Exactly one pending call, with `reply_with`; `ttl_seconds: 0` means no deadline.",
        ),
        *SUSPEND_POLICY_EXAMPLES,
        ex(
            "with a callback URL and the engine's version",
            {**v.SUSPEND_TOOL, "callback": True, "engine_version": "engine-2.4.1"},
            description="A third party may finish the wait at `callback_url`; a resume from another engine version "
            "is refused unless it accepts the drift.",
        ),
        answer("paused", {**v.pause(), "run_revision": 2, "run_state": "paused"}, 201),
        answer(
            "paused and resumed by its early results",
            {
                **v.pause(),
                "run_revision": 2,
                "run_state": "paused",
                "resume": v.claimed(v.admission(), start=v.START, suspension=v.pause(), results=[EARLY]),
            },
            201,
        ),
    ],
    "keep_early_result": [
        ex("a result", {"call_id": "call_1", "content": {"rows": 1}}),
        ex("kept for ten minutes", {"call_id": "call_2", "content": "done", "ttl_seconds": 600}),
        answer("kept", KEPT, 201),
        answer(
            "the last one missing",
            {**KEPT, "resume": v.claimed(v.admission(), start=v.START, suspension=v.pause(), results=[EARLY])},
            201,
        ),
        answer("again", {**KEPT, "fresh": False}, 200),
    ],
    "resume_by_callback": [
        ex("a result", {"version": v.version(), "results": [EARLY]}),
        answer(
            "first answer",
            v.claimed(v.admission(actor="callback"), start=v.START, suspension=v.pause(), results=[EARLY]),
            201,
        ),
        answer("replay", v.claimed(v.admission(actor="callback", fresh=False), start=v.START, fresh=False), 200),
    ],
    "resume_run": [
        ex("a result", {"version": v.version(), "results": [{"call_id": "call_1", "content": {"rows": 1}}]}),
        ex("a tool error", {"version": v.version(), "results": [{"call_id": "call_1", "error": "timeout"}]}),
        answer(
            "first answer",
            v.claimed(
                v.admission(),
                start=v.START,
                suspension=v.pause(),
                results=[{"call_id": "call_1", "content": {"rows": 1}}],
            ),
            201,
        ),
        answer("replay", v.claimed(v.admission(fresh=False), start=v.START, fresh=False), 200),
    ],
    "complete_run": [
        ex("after a claim", {"revision": 3}, description="The admission's `claimed_revision`."),
        answer("completed", v.run(state="completed", revision=4, last_reason="external_tool"), 200),
    ],
    "fail_run": [
        ex("after a claim", {"revision": 3, "error": "model refused"}),
        answer("failed", v.run(state="failed", revision=4, error="model refused", last_reason="external_tool"), 200),
    ],
    "cancel_run": [
        ex("a paused run", {"revision": 2}),
        answer("cancelled", v.run(state="cancelled", revision=3, last_reason="external_tool"), 200),
    ],
    "list_suspensions": [answer("a page", v.pause_row(), 200)],
    "get_suspension": [answer("a pause", v.pause(), 200)],
    "extend_suspension": [
        ex("an hour more", {"seconds": 3600, "reason": "the approver is out until noon"}),
        answer("extended", {**v.pause(), "run_revision": 2, "run_state": "paused"}, 200),
    ],
}

# Refusals shown under their status (problem+json), beside the codes the status lists.
REFUSALS: dict[str, list[OpenApiExample]] = {
    "register_run": [
        refusal(
            "unknown field",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                "The request has invalid fields.",
                errors={"agnet": ["Unknown field."]},
            ),
        )
    ],
    "suspend_run": [STALE_REVISION],
    "resume_run": [
        refusal(
            "claimed by another request",
            v.problem(
                409,
                "admission_conflict",
                "A different request already claimed this pause",
                "this pause was already claimed by a different request",
                request_digest="3528503a" + "0" * 56,
                admitted_digest=v.REQUEST_DIGEST,
            ),
        ),
        refusal(
            "results mismatch",
            v.problem(
                422,
                "results_mismatch",
                "Results do not match the pending calls one to one",
                "results do not match the pending calls",
                unknown=["call_2"],
                missing=["call_1"],
            ),
        ),
    ],
    "complete_run": [STALE_REVISION],
    "resume_by_callback": [refusal("no such callback", v.problem(404, "not_found", "Not found", "no such callback"))],
}
