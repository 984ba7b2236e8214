"""The auditors' answer bodies (docs/api.md, "7.14 Audit"): the checkpoints' public key and the export's lines.

Declared once, as in answers.py (its docstring says how a field keeps its bytes).
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self
from uuid import UUID

from pydantic import Field, RootModel

from ..models import AuditCheckpoint, PrunedRun
from .answers import Answer, AsGiven, Moment, doc


class AuditPublicKeyOut(Answer):
    algorithm: Literal["ed25519"] = doc("Always `ed25519`.")
    public_key: str = doc("Base64 of the key's 32 raw bytes.")
    encoding: str
    signs: str = doc("What each signature covers.")

    @classmethod
    def of(cls, public_key: str) -> Self:
        return cls(
            algorithm="ed25519",
            public_key=public_key,
            encoding="base64 of the 32 raw bytes",
            signs="each audit checkpoint: its workspace, seq, at, previous and root (docs/auditors.md)",
        )


class AuditEventLine(Answer):
    """An event line of the export: `at` always has microseconds, as the hash covers it."""

    type: Literal["event"]
    id: int
    run_id: UUID
    scope: str
    kind: str
    actor: str
    revision: int
    data: AsGiven[Any]
    at: Moment
    prev_hash: str = doc("The hash of the run's previous event; 64 zeros for its first.")
    hash: str = doc(
        "SHA-256 (lowercase hex) over prev_hash, a newline and the canonical JSON of "
        "{id, run_id, scope, kind, actor, revision, data, at}: the run's audit chain."
    )

    @classmethod
    def of(cls, e: Mapping[str, Any]) -> Self:
        """One event of `GET /audit/export`: the fields its hash covers (`at` as hashed) and its two hashes."""
        return cls(
            type="event",
            id=e["id"],
            run_id=e["run_id"],
            scope=e["scope"],
            kind=e["kind"],
            actor=e["actor"],
            revision=e["revision"],
            data=e["data"],
            at=e["at"],
            prev_hash=e["prev_hash"],
            hash=e["hash"],
        )


class AuditCheckpointLine(Answer):
    """One checkpoint of the export with only the reader's `runs` lines; `complete` says whether that is all of them
    (then the root can be recomputed from the lines; otherwise the signature and the root chain still check)."""

    type: Literal["checkpoint"]
    workspace: str = doc(
        'The chain it belongs to: a workspace, each with its own; "" for the legacy chain (docs/auditors.md).'
    )
    seq: int = doc("Its number in its workspace's chain: 1, 2, 3...")
    at: Moment = doc("RFC 3339 UTC with microseconds, as signed.")
    previous: str = doc("The root of checkpoint seq - 1 of the same workspace; 64 zeros for the first.")
    root: str = doc("SHA-256 over `previous`, a newline and the lines.")
    signature: str = doc("Ed25519, base64, over the signed text (docs/auditors.md).")
    algorithm: Literal["ed25519"]
    runs: AsGiven[list[list[Any]]] = doc("[run_id, head_hash, event_count] of each exported run the checkpoint sealed.")
    complete: bool = doc("True when `runs` holds every line: the root can be recomputed.")

    @classmethod
    def of(cls, checkpoint: AuditCheckpoint, runs: list[list[Any]]) -> Self:
        return cls(
            type="checkpoint",
            workspace=checkpoint.workspace,
            seq=checkpoint.seq,
            at=checkpoint.at,
            previous=checkpoint.previous,
            root=checkpoint.root,
            signature=checkpoint.signature,
            algorithm="ed25519",
            runs=runs,
            complete=len(runs) == len(checkpoint.runs),
        )


class AuditPrunedLine(Answer):
    """An exported run whose first `count` events were pruned (docs/auditors.md, "Verifying a pruned trail"): the
    last of them had hash `head`, and checkpoint `seq` of `workspace` seals the line `run_id head count`."""

    type: Literal["pruned"]
    run_id: UUID
    count: int = doc("How many of the run's first events were pruned: its first kept event is number count + 1.")
    head: str = doc("The hash of the last pruned event: the first kept event's prev_hash.")
    workspace: str
    seq: int = doc("The checkpoint of `workspace` that seals the line [run_id, head, count].")

    @classmethod
    def of(cls, pruned: PrunedRun) -> Self:
        return cls(
            type="pruned",
            run_id=pruned.run_id,
            count=pruned.count,
            head=pruned.head,
            workspace=pruned.workspace,
            seq=pruned.seq,
        )


class AuditLine(
    RootModel[Annotated[AuditEventLine | AuditCheckpointLine | AuditPrunedLine, Field(discriminator="type")]]
):
    """One line of the export: an event, a checkpoint or a pruned prefix (its `type` says which)."""
