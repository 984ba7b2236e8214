"""Closures, expiry receipts and flow waits (docs/api.md §7.5 to §7.7)."""

from drf_spectacular.utils import OpenApiExample

from . import samples as v
from .base import Doc, answer, ex, refusal

OPERATIONS = {
    "close_run": Doc(
        tag="closures",
        role="operator",
        summary="Close an uncertain start as incomplete (T10)",
        description="For a run left `running` by a start whose engine died. The proof binds the latest "
        "admission: its `version` and `request_digest` (as `admission_digest`), its start's `digest` (as "
        "`start_digest`) and the run's current `revision` (as `run_revision`), all read from "
        "`GET /runs/{id}/admissions/latest` and `GET /runs/{id}`. `observed_at <= now < expires_at`, RFC 3339 "
        "with an offset. The run becomes `incomplete` and the old worker is fenced. The identical request "
        "again answers 200 with the receipt; never accepts output.",
        errors={
            400: ("invalid_request",),
            403: ("forbidden",),
            404: ("not_found",),
            409: ("closure_conflict", "invalid_state", "version_conflict"),
            413: ("request_too_large",),
        },
    ),
    "get_closure_receipt": Doc(
        tag="closures",
        role="any role",
        summary="Read a closure receipt",
        description="The receipt of an operator's closure of the pause's execution, `fresh: false`. "
        "`valid` is only an integrity check.",
        errors={404: ("not_found",)},
    ),
    "get_expiry_receipt": Doc(
        tag="closures",
        role="any role",
        summary="Read an expiry receipt",
        description="Exists when the sweep expired an **admitted but unstarted** continuation. A pause that "
        "expired with no admission has none (404): its `expired` event and the run's state are the record.",
        errors={404: ("not_found",)},
    ),
    "park_flow_wait": Doc(
        tag="flow waits",
        role="engine (in `tenant/env`)",
        summary="Park a flow's wait",
        description="Creates a run and its pause keyed by the envelope, in scope `tenant/env`; the `snapshot` "
        "comes back unchanged at the fresh start (`continuation.provenance.flow_snapshot`). Embed the answer's "
        "`correlation_id` in the dispatch. `decision_token` is required for `reason: approval`. "
        "`ttl_seconds` as for suspend (0: no deadline). Not a replay: a second park under the same key while "
        "the wait is live is a 409.",
        errors={
            400: ("invalid_request",),
            403: ("forbidden",),
            409: ("already_suspended",),
            413: ("request_too_large",),
        },
    ),
    "resume_flow_wait": Doc(
        tag="flow waits",
        role="bus (in `tenant/env`)",
        summary="Resume a flow wait by correlation id",
        description="`tenant` and `env` name the wait's scope `tenant/env`. The admitted input is the "
        "canonical JSON of `output` (any JSON; a string is kept as plain text). Approval waits need the "
        "`decision_token` given at park time. Answers 201 with the admission receipt (source `dispatch`); "
        "the engine starts it like any other. The identical call again answers 200, `fresh: false`.",
        errors={
            400: ("invalid_request",),
            403: ("forbidden", "bad_token"),
            404: ("not_found",),
            409: ("wrong_gate", "admission_conflict", "version_conflict", "not_suspended"),
            410: ("suspension_expired",),
            413: ("input_too_large", "request_too_large"),
        },
    ),
}

CLOSE = {
    "schema_version": 1,
    "version": v.version(),
    "admission_digest": v.REQUEST_DIGEST,
    "start_digest": v.START_DIGEST,
    "run_revision": 3,
    "issuer": "ops-runbook",
    "issuer_revision": "v3",
    "proof_ref": "incident/4711",
    "proof_digest": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "observed_at": v.OBSERVED_AT,
    "expires_at": v.PROOF_EXPIRES_AT,
}


def closure_receipt(*, fresh: bool) -> dict[str, object]:
    retained = {**CLOSE, "actor": v.OPERATOR, "scope": "demo"}
    return {
        "id": "01a22e4f-9148-7005-8b15-9c6d098376e3",
        "run_id": v.RUN_ID,
        "suspension_id": v.SUSPENSION_ID,
        "scope": "demo",
        "request": retained,
        "request_digest": "4a0a0cea" + "1" * 56,
        "run_revision": 4,
        "event_id": 25,
        "actor": v.OPERATOR,
        "closed_at": v.AT,
        "digest": "71f35472" + "2" * 56,
        "valid": True,
        "fresh": fresh,
    }


PARKED = {
    "correlation_id": v.CORRELATION_ID,
    "store_key": "demo:slack:C01:conv-3:U42::pack=billing::378d0025",
    "user_id": "sess77fea2ea515f1412",
    "scope": "demo/prod",
    "run_id": v.RUN_ID,
    "suspension_id": v.SUSPENSION_ID,
    "run_revision": 2,
    "reason": "external_tool",
    "expires_at": v.LATER,
}

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "close_run": [
        ex(
            "a proof",
            CLOSE,
            description="Ids and digests from `GET /runs/{id}/admissions/latest`; the window must hold now.",
        ),
        answer("closed", closure_receipt(fresh=True), 201),
        answer("replay", closure_receipt(fresh=False), 200),
    ],
    "get_closure_receipt": [answer("a receipt", closure_receipt(fresh=False), 200)],
    "get_expiry_receipt": [
        answer(
            "a receipt",
            {
                "run_id": v.RUN_ID,
                "suspension_id": v.SUSPENSION_ID,
                "scope": "demo",
                "request_digest": v.REQUEST_DIGEST,
                "run_revision": 4,
                "expired_at": v.LATER,
                "event_id": 32,
                "digest": "d4840f67" + "3" * 56,
                "valid": True,
            },
            200,
        )
    ],
    "park_flow_wait": [
        ex("external tool", v.PARK_TOOL),
        ex("approval with token", v.PARK_APPROVAL, description="Only the approver's side holds the token."),
        answer("parked", PARKED, 201),
    ],
    "resume_flow_wait": [
        ex(
            "a result",
            {"tenant": "demo", "env": "prod", "correlation_id": v.CORRELATION_ID, "output": {"approved_by": "manager"}},
        ),
        ex(
            "an approval wait",
            {
                "tenant": "demo",
                "env": "prod",
                "correlation_id": v.CORRELATION_ID,
                "output": "approved",
                "decision_token": "tok-5b1e9",
            },
        ),
        answer("admitted", v.claimed(v.admission("dispatch", actor=v.BUS, scope="demo/prod")), 201),
    ],
}

REFUSALS: dict[str, list[OpenApiExample]] = {
    "park_flow_wait": [
        refusal(
            "a live wait under this key",
            v.problem(
                409,
                "already_suspended",
                "The run already has a live pause",
                f"a wait is already parked under this key (run {v.RUN_ID})",
            ),
        )
    ],
    "resume_flow_wait": [
        refusal(
            "another nonce",
            v.problem(
                409,
                "wrong_gate",
                "The correlation nonce does not match the parked wait",
                "the correlation id does not carry the parked wait's nonce",
            ),
        )
    ],
}
