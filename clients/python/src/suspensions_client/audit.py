"""The audit chain and its checkpoints as pure functions (docs/auditors.md, "What is recorded"): no Django, no database.

One module serves every side that must agree byte for byte: the event writer
(which hands the canonical text to PostgreSQL in two pieces around the id the
database generates), the migration's back-fill, the verifier (`verify_audit`,
the admin's "verify this run") and the client's offline verifier, which
carries a copy of this file (clients/python/src/suspensions_client/audit.py;
tests/audit/test_chain.py holds the copy to this one).

An event's hash is SHA-256 over `prev_hash + "\\n" + canonical JSON of
{id, run_id, scope, kind, actor, revision, data, at}`, `at` as RFC 3339 UTC
with microseconds and `Z`; the first event of a run chains from 64 zeros.
A checkpoint's root is SHA-256 over `previous_root + "\\n" + lines`, one line
`run_id head_hash event_count` per run whose chain changed since the previous
checkpoint of its workspace (one chain of checkpoints per workspace), sorted
by run id, joined by "\\n".
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

GENESIS = "0" * 64
# The event fields the hash covers; canonical JSON sorts them as
# actor, at, data, id, kind, revision, run_id, scope: the id sits between two pieces.
HEAD_KEYS = ("actor", "at", "data")
TAIL_KEYS = ("kind", "revision", "run_id", "scope")


def canonical(value: Any) -> str:
    """Keys sorted, separators `,` `:`, no ASCII escaping (docs/api.md, "5. Digests and bounds"); the text, hashed as
    UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def rfc3339(moment: datetime | str) -> str:
    """UTC with microseconds and a Z; a string is parsed first (an export or an API body)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    return moment.astimezone(UTC).isoformat(timespec="microseconds").removesuffix("+00:00") + "Z"


def hashed_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The covered fields of an event in their hashed form (run_id a string, `at` RFC 3339 with microseconds)."""
    return {
        "actor": fields["actor"],
        "at": rfc3339(fields["at"]),
        "data": fields["data"],
        "kind": fields["kind"],
        "revision": int(fields["revision"]),
        "run_id": str(fields["run_id"]),
        "scope": fields["scope"],
    }


def pieces(fields: Mapping[str, Any]) -> tuple[str, str]:
    """The canonical text of an event without its id: (`before`, `after`), so that the text is before + id + after.

    The database writes the id, so it finishes the hash: see services/sql/rows.py, `chain`.
    """
    covered = hashed_fields(fields)
    head = canonical({k: covered[k] for k in HEAD_KEYS})
    tail = canonical({k: covered[k] for k in TAIL_KEYS})
    return head[:-1] + ',"id":', "," + tail[1:]


def event_hash(prev_hash: str, fields: Mapping[str, Any]) -> str:
    """The hash of one event (its `id` among `fields`) chained after `prev_hash`."""
    before, after = pieces(fields)
    text = f"{prev_hash}\n{before}{int(fields['id'])}{after}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChainResult:
    """What a walk of one run's events found: how many were checked, the head, the first problem (None: intact)."""

    checked: int
    head: str
    problem: str | None = None
    # The id of the first event found wrong (None when intact, or when the problem is at the end).
    event_id: int | None = None


def walk(events: Sequence[Mapping[str, Any]], start: str = GENESIS) -> ChainResult:
    """Recompute one run's chain over its events in id order; stop at the first that does not fit.

    `start` is the hash the first event links to: 64 zeros, or the sealed last hash of a pruned prefix
    (docs/auditors.md, "Verifying a pruned trail").

    Each event is a mapping with the covered fields plus `prev_hash` and
    `hash`. The kind of tampering is named when the rows tell it: content
    that no longer matches its own hash was altered; a `prev_hash` that links
    to a later row's hash means rows were reordered (ids swapped); one that
    skips the row before it means that row was inserted; one that links to no
    row at all means a row before it was deleted (or the row before it was
    altered and re-hashed: the two leave the same trace).
    """
    stored = {e["hash"]: i for i, e in enumerate(events)}
    prev, last_id = start, None
    for i, e in enumerate(events):
        eid = int(e["id"])
        if last_id is not None and eid <= last_id:
            return ChainResult(i, prev, f"event {eid}: reordered (its id follows {last_id})", eid)
        if e["prev_hash"] != prev:
            return _broken(events, i, stored, prev, start)
        if event_hash(prev, e) != e["hash"]:
            return ChainResult(i, prev, f"event {eid}: altered (its content does not match its hash)", eid)
        prev, last_id = e["hash"], eid
    return ChainResult(len(events), prev)


def _broken(
    events: Sequence[Mapping[str, Any]], i: int, stored: Mapping[str, int], prev: str, start: str
) -> ChainResult:
    """Name the tampering behind a `prev_hash` that does not link to the row before it."""
    e, eid = events[i], int(events[i]["id"])
    linked = stored.get(e["prev_hash"])
    before = events[i - 2]["hash"] if i >= 2 else start
    if linked is not None and linked > i:
        return ChainResult(
            i, prev, f"event {eid}: reordered (it links to event {events[linked]['id']}, a later id)", eid
        )
    if i >= 1 and e["prev_hash"] == before:
        inserted = int(events[i - 1]["id"])
        return ChainResult(i - 1, before, f"event {inserted}: inserted (the next event links past it)", inserted)
    return ChainResult(
        i, prev, f"event {eid}: an event before it was deleted, or the one before it altered and re-hashed", eid
    )


def checkpoint_lines(runs: Sequence[Sequence[Any]]) -> str:
    """The covered lines `run_id head_hash event_count`, sorted by run id, joined by newlines."""
    return "\n".join(f"{r} {h} {int(n)}" for r, h, n in sorted((str(r), h, n) for r, h, n in runs))


def checkpoint_root(previous: str, runs: Sequence[Sequence[Any]]) -> str:
    return hashlib.sha256(f"{previous}\n{checkpoint_lines(runs)}".encode()).hexdigest()


def signed_text(*, seq: int, at: str, previous: str, root: str, workspace: str = "") -> bytes:
    """What a checkpoint's Ed25519 signature covers, one item per line.

    A workspace's checkpoint (one chain per workspace): `suspensions-audit-checkpoint/2`, the workspace,
    seq, time, previous root and root. A legacy checkpoint (workspace "", written before there was a chain
    per workspace): `suspensions-audit-checkpoint`, seq, time, previous root and root. The first line names
    the text, so a signature over one cannot be read as the other, nor one workspace's as another's.
    """
    if workspace:
        return f"suspensions-audit-checkpoint/2\n{workspace}\n{int(seq)}\n{at}\n{previous}\n{root}".encode()
    return f"suspensions-audit-checkpoint\n{int(seq)}\n{at}\n{previous}\n{root}".encode()
