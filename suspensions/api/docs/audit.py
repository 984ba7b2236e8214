"""The audit trail for auditors (docs/api.md "Audit", docs/auditors.md): the public key and the export."""

import base64

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from drf_spectacular.utils import OpenApiExample

from ... import audit
from . import samples as v
from .base import Doc, answer, ex, refusal
from .runs import REGISTERED

OPERATIONS = {
    "get_audit_public_key": Doc(
        tag="audit",
        role="auditor",
        summary="Read the checkpoints' public key",
        description="The Ed25519 key that verifies every audit checkpoint's signature, base64 of its 32 raw "
        "bytes. Keep a copy from a trusted moment: a key read later from a tampered service proves nothing.",
        errors={403: ("forbidden",)},
    ),
    "export_audit": Doc(
        tag="audit",
        role="auditor",
        summary="Export the audit trail",
        description="JSON Lines (`application/x-ndjson`), streamed: every event of the scopes you audit (or of "
        "`scope`), at or after `since` when given, in id order, each with its `prev_hash` and `hash`; then the "
        "checkpoints of their workspaces (one chain per workspace) from the last one before `since` on, each "
        "with every line when you export its whole workspace (`complete`), else the lines of the exported runs. "
        "Each line says what it is in `type`. `suspensions-verify FILE --public-key KEY` checks it offline.",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "list_legal_holds": Doc(
        tag="audit",
        role="auditor or operator",
        summary="List legal holds",
        description="The legal holds of the caller's auditor and operator scopes, newest first, released ones "
        "included (`active` false).",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "create_legal_hold": Doc(
        tag="audit",
        role="auditor or operator",
        summary="Create a legal hold",
        description="Keeps events past `AUDIT_RETENTION_DAYS`: give exactly one of `scope` (every run of it and "
        "below it) and `run` (one run), and a `reason`. Pruning never drops a held run's events "
        '(docs/auditors.md, "Retention and legal holds"). Takes an `Idempotency-Key`.',
        errors={400: ("invalid_request",), 403: ("forbidden",), 404: ("not_found",), 413: ("request_too_large",)},
    ),
    "release_legal_hold": Doc(
        tag="audit",
        role="auditor or operator",
        summary="Release a legal hold",
        description="Ends the hold; the row stays as its record. The next pruning may then drop what it kept.",
        errors={403: ("forbidden",), 404: ("not_found",), 409: ("invalid_state",)},
    ),
}

_EVENT = {
    "type": "event",
    **REGISTERED,
    "prev_hash": audit.GENESIS,
    "hash": audit.event_hash(audit.GENESIS, REGISTERED),
}
_LINES = [[v.RUN_ID, _EVENT["hash"], 1]]
_ROOT = audit.checkpoint_root(audit.GENESIS, _LINES)
# The examples are signed for real, with a key that signs nothing else: a reader can check them by hand.
_KEY = Ed25519PrivateKey.from_private_bytes(b"an example key; it signs nothing")
_PUBLIC = base64.b64encode(_KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()
_AT = "2026-11-30T21:15:00.000412Z"
_TEXT = audit.signed_text(workspace="demo", seq=1, at=_AT, previous=audit.GENESIS, root=_ROOT)
_SIGNATURE = base64.b64encode(_KEY.sign(_TEXT)).decode()

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "get_audit_public_key": [
        answer(
            "the key",
            {
                "algorithm": "ed25519",
                "public_key": _PUBLIC,
                "encoding": "base64 of the 32 raw bytes",
                "signs": "each audit checkpoint: its workspace, seq, at, previous and root (docs/auditors.md)",
            },
            200,
        )
    ],
    "create_legal_hold": [
        ex("a scope", {"scope": "demo", "reason": "Litigation hold, case 2026-114"}),
        ex("a run", {"run": v.RUN_ID, "reason": "Incident review INC-881"}),
    ],
    "export_audit": [
        answer("an event line", _EVENT, 200),
        answer(
            "a checkpoint line",
            {
                "type": "checkpoint",
                "workspace": "demo",
                "seq": 1,
                "at": _AT,
                "previous": audit.GENESIS,
                "root": _ROOT,
                "signature": _SIGNATURE,
                "algorithm": "ed25519",
                "runs": _LINES,
                "complete": True,
            },
            200,
        ),
    ],
}

REFUSALS: dict[str, list[OpenApiExample]] = {
    "export_audit": [
        refusal(
            "a malformed since",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                "since must be an RFC 3339 time with its offset",
                errors={"since": ["Not an RFC 3339 time."]},
            ),
        )
    ],
}
