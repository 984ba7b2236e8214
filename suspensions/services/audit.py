"""The audit trail's seals and their checks (docs/auditors.md, "What is recorded"): signed checkpoints, and verification
of chains and seals.

The chains themselves are written by the one event writer (claims.write_events,
sql/rows.py `CHAIN_CALL`: the function of migration 0017); the arithmetic is suspensions/audit.py.

Checkpoints (`write_checkpoint`, the beat's task): one chain per workspace
(a tenant), so what a workspace receives and exports moves with its own runs
only (issue 50, item 7; docs/decisions.md, "One checkpoint chain per
workspace"). A tick writes one checkpoint for each workspace with a changed
run, in one transaction, no run lock. Event ids are drawn before commit, so they are not in commit order: an
event may commit after a checkpoint with a smaller id and an earlier `at`
(its transaction's clock) than events the checkpoint saw. So "the runs whose
chain changed since" is not "events with a larger id": the candidates are
the runs with an event at or after the previous checkpoint's time less a
grace window (AUDIT_CHECKPOINT_GRACE_SECONDS, far longer than any
transition's transaction), and a candidate is sealed only when its current
head and count differ from what was last sealed for it (AuditRunHead). A late
event is thus sealed by the next checkpoint, and a run is never sealed twice
at the same head. Two overlapping ticks cannot both write: (workspace, seq)
is unique, and the loser's INSERT fails and its tick writes nothing.

Verification (`verify_run`, `verify_all`) trusts nothing in the database
but the public key: it recomputes every hash, every root and every signature.
"""

import base64
import functools
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Min, OuterRef, Q, Subquery

from .. import audit
from ..clock import db_now
from ..models import AuditCheckpoint, AuditRunHead, Event, EventType, OutboxEvent, PrunedRun, Run
from . import outbox
from .chains import COVERED, runs_by_chain
from .sql.rows import Writes

# -- the key ------------------------------------------------------------------------------------


@functools.cache
def _signing_key(seed: str) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(base64.b64decode(seed))


def signing_key() -> Ed25519PrivateKey:
    return _signing_key(settings.AUDIT_SIGNING_KEY)


def public_key() -> str:
    """The checkpoints' Ed25519 public key, base64 of its 32 raw bytes (`GET /api/v1/audit/public-key`)."""
    raw = signing_key().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def signature_valid(checkpoint: AuditCheckpoint, key: Ed25519PublicKey) -> bool:
    text = audit.signed_text(
        workspace=checkpoint.workspace,
        seq=checkpoint.seq,
        at=audit.rfc3339(checkpoint.at),
        previous=checkpoint.previous,
        root=checkpoint.root,
    )
    try:
        key.verify(base64.b64decode(checkpoint.signature), text)
    except (InvalidSignature, ValueError):
        return False
    return True


def label(checkpoint: AuditCheckpoint | None, *, workspace: str = "", seq: int | str = 0) -> str:
    """How problems name a checkpoint: `checkpoint 3 of acme`, or `checkpoint 3` in the legacy chain."""
    if checkpoint is not None:
        workspace, seq = checkpoint.workspace, checkpoint.seq
    return f"checkpoint {seq} of {workspace}" if workspace else f"checkpoint {seq}"


# -- writing a checkpoint -----------------------------------------------------------------------


def _changed_heads(since: datetime | None) -> dict[str, list[list[Any]]]:
    """Each workspace's [run_id, head, count] of the runs whose chain differs from what was last sealed for it."""
    events = Event.objects.all()
    if since is not None:
        events = events.filter(run_id__in=Event.objects.filter(at__gte=since).values("run_id"))
    newest = Event.objects.filter(run_id=OuterRef("run_id")).order_by("-id").values("hash")[:1]
    heads = (
        events.values("run_id")
        .annotate(count=Count("id"), head=Subquery(newest), workspace=Min("scope_l1"))
        .order_by("run_id")
    )
    found = [(h["workspace"], [str(h["run_id"]), h["head"], h["count"]]) for h in heads]
    # A pruned run's events are counted from its first, pruned ones included (its lines keep their meaning).
    offsets = dict(PrunedRun.objects.filter(run_id__in=[f[1][0] for f in found]).values_list("run_id", "count"))
    for _, line in found:
        line[2] += offsets.get(UUID(line[0]), 0)
    sealed = {
        str(r.run_id): (r.head, r.count) for r in AuditRunHead.objects.filter(run_id__in=[f[1][0] for f in found])
    }
    changed: dict[str, list[list[Any]]] = {}
    for workspace, line in found:
        if sealed.get(line[0]) != (line[1], line[2]):
            changed.setdefault(workspace, []).append(line)
    return changed


def write_checkpoint() -> list[AuditCheckpoint]:
    """Seal the chains that changed since the last tick: one checkpoint per workspace with a changed run, each
    in that workspace's chain; none when nothing changed (or when another tick won a seq).

    Each is announced as `audit.checkpoint` through the outbox to its workspace's endpoints only.
    """
    try:
        with transaction.atomic():
            return _write_checkpoints()
    except IntegrityError:  # another tick wrote one of these (workspace, seq) first: it sealed the same changes
        return []


def _write_checkpoints() -> list[AuditCheckpoint]:
    now = db_now()
    last = AuditCheckpoint.objects.order_by("-id").first()  # the last tick's (every tick's rows share one `at`)
    grace = timedelta(seconds=settings.AUDIT_CHECKPOINT_GRACE_SECONDS)
    changed = _changed_heads(None if last is None else last.at - grace)
    if not changed:
        return []
    checkpoints = seal(changed, now)
    AuditRunHead.objects.bulk_create(
        [AuditRunHead(run_id=r, head=h, count=n, seq=c.seq) for c in checkpoints for r, h, n in c.runs],
        update_conflicts=True,
        unique_fields=["run_id"],
        update_fields=["head", "count", "seq"],
    )
    return checkpoints


def seal(lines: dict[str, list[list[Any]]], now: datetime) -> list[AuditCheckpoint]:
    """Write and announce the next checkpoint of each workspace in `lines` over its lines `[run_id, head, count]`.

    Inside the caller's transaction; (workspace, seq) is unique, so a tick that wrote the same seq first makes
    this raise IntegrityError. The checkpoint tick and pruning (services/retention.py) both seal through here.
    """
    heads = AuditCheckpoint.objects.filter(workspace__in=lines).order_by("workspace", "-seq").distinct("workspace")
    latest = {c.workspace: c for c in heads}
    checkpoints = [_sealed(w, runs, latest.get(w), now) for w, runs in sorted(lines.items())]
    AuditCheckpoint.objects.bulk_create(checkpoints)
    _announce(checkpoints)
    return checkpoints


def _sealed(workspace: str, runs: list[list[Any]], last: AuditCheckpoint | None, now: datetime) -> AuditCheckpoint:
    """The workspace's next checkpoint over `runs`, chained to its `last` one and signed (not saved)."""
    previous, seq = (last.root, last.seq + 1) if last else (audit.GENESIS, 1)
    root = audit.checkpoint_root(previous, runs)
    text = audit.signed_text(workspace=workspace, seq=seq, at=audit.rfc3339(now), previous=previous, root=root)
    signature = base64.b64encode(signing_key().sign(text)).decode()
    return AuditCheckpoint(
        workspace=workspace, seq=seq, at=now, previous=previous, root=root, runs=runs, signature=signature
    )


def checkpoint_data(checkpoint: AuditCheckpoint) -> dict[str, Any]:
    """What `audit.checkpoint` carries: enough to check the signature, not the runs.

    Not how many runs it sealed either (issue 50, item 7): only the
    workspace's own endpoints get it, but the lines stay in the export.
    """
    return {
        "workspace": checkpoint.workspace,
        "seq": checkpoint.seq,
        "at": audit.rfc3339(checkpoint.at),
        "root": checkpoint.root,
        "previous": checkpoint.previous,
        "signature": checkpoint.signature,
        "algorithm": "ed25519",
    }


def _announce(checkpoints: list[AuditCheckpoint]) -> None:
    """One `audit.checkpoint` per checkpoint, scoped to its workspace: its endpoints there get it, no other's."""
    rows = []
    for checkpoint in checkpoints:
        row = OutboxEvent(type=EventType.AUDIT_CHECKPOINT, data=checkpoint_data(checkpoint), created_at=checkpoint.at)
        row.stamp_scope(checkpoint.workspace)
        rows.append(row)
    writes = Writes()
    writes.insert(rows)
    writes.send()
    outbox.enqueue_fan_out_of(rows)


# -- verifying --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunVerdict:
    """One run's chain recomputed: ok, how many events were checked, the first problem, the latest sealing seq."""

    run_id: str
    ok: bool
    events: int
    problem: str | None
    checkpoint: int | None
    # "pruned before event N, sealed by checkpoint K" when the run's first events were pruned.
    pruned: str | None = None


def chain_of(run_id: UUID | str) -> list[dict[str, Any]]:
    """A run's events in id order, as the chain covers them."""
    return list(Event.objects.filter(run_id=run_id).order_by("id").values(*COVERED))


def sealed_line_problem(
    run_id: str, name: str, head: str, count: int, events: list[dict[str, Any]], offset: int = 0
) -> str | None:
    """Does the line of checkpoint `name` (its `label`) for the run still match the chain's first `count` events?

    `offset`: how many of the run's first events were pruned (`events` starts after them).
    """
    if offset + len(events) < count:
        return f"run {run_id}: {name} sealed {count} events, {offset + len(events)} remain (events deleted)"
    if events[count - offset - 1]["hash"] != head:
        return f"run {run_id}: {name} sealed head {head} at event {count}; the chain there differs"
    return None


def verify_run(run_id: UUID | str) -> RunVerdict:
    """Recompute one run's chain and check the latest checkpoint that sealed it (root, signature, line).

    A read; takes no lock. Used by `manage.py verify_audit --run` and the admin's run page.
    """
    rid = str(run_id)
    events = chain_of(rid)
    sealing = list(AuditCheckpoint.objects.filter(runs__contains=[[rid]]).order_by("id"))
    sealed: Sealed = {rid: [(label(c), h, int(n)) for c in sealing for r, h, n in c.runs if r == rid]}
    prefix = pruned_prefixes(sealed, [rid]).get(rid, Prefix())
    walked = audit.walk(events, prefix.head)
    problems = [prefix.problem, walked.problem]
    for checkpoint in sealing:
        problems.append(checkpoint_problem(checkpoint, None))
    problems += [sealed_line_problem(rid, name, h, n, events, prefix.count) for name, h, n in sealed[rid]]
    problem = next((p for p in problems if p), None)
    seq = sealing[-1].seq if sealing else None
    return RunVerdict(
        run_id=rid, ok=problem is None, events=walked.checked, problem=problem, checkpoint=seq, pruned=prefix.said
    )


def checkpoint_problem(checkpoint: AuditCheckpoint, previous: str | None) -> str | None:
    """The checkpoint's own checks: its root recomputed, its link to the previous root (when given), its signature."""
    name = label(checkpoint)
    if previous is not None and checkpoint.previous != previous:
        return f"{name}: its previous root does not match checkpoint {checkpoint.seq - 1}'s root"
    if audit.checkpoint_root(checkpoint.previous, checkpoint.runs) != checkpoint.root:
        return f"{name}: its root does not match its lines (altered)"
    key = signing_key().public_key()
    if not signature_valid(checkpoint, key):
        return f"{name}: its signature does not verify (altered)"
    return None


@dataclass
class Report:
    """What `verify_all` checked and every problem found, in the order found (first problem first)."""

    runs: int = 0
    events: int = 0
    checkpoints: int = 0
    problems: list[str] = field(default_factory=list)
    pruned: int = 0  # runs whose kept events start after a pruned prefix, proved from its seal


# Each run's sealed lines: (the checkpoint's label, head, count), oldest first.
Sealed = dict[str, list[tuple[str, str, int]]]


@dataclass(frozen=True)
class Prefix:
    """A run's pruned prefix: `count` events, the last with hash `head` (none pruned: 0 and 64 zeros), what the
    verifier says of it, and the problem when no checked checkpoint seals it."""

    count: int = 0
    head: str = audit.GENESIS
    said: str | None = None
    problem: str | None = None


def pruned_prefixes(lines: Sealed, run_ids: list[str] | None = None) -> dict[str, Prefix]:
    """Each pruned run's prefix, trusted only as far as a signed checkpoint's line `run_id head count` holds it
    (docs/auditors.md, "Verifying a pruned trail"): the PrunedRun row says which checkpoint; `lines` are checked."""
    rows = PrunedRun.objects.all() if run_ids is None else PrunedRun.objects.filter(run_id__in=run_ids)
    found = {}
    for p in rows.iterator(chunk_size=2000):
        rid, name = str(p.run_id), label(None, workspace=p.workspace, seq=p.seq)
        said = f"pruned before event {p.count + 1}, sealed by {name}"
        unsealed = (name, p.head, p.count) not in lines.get(rid, [])
        problem = f"run {rid}: {said}, but {name} does not seal that prefix" if unsealed else None
        found[rid] = Prefix(p.count, p.head, said, problem)
    return found


def verify_checkpoints(report: Report) -> Sealed:
    """Walk each chain of checkpoints (the legacy one, then each workspace's) by seq: gaps, links, roots,
    signatures. Returns each run's sealed lines, oldest first (a run's legacy lines, then its workspace's)."""
    lines: Sealed = {}
    workspace: str | None = None
    expected_seq, link = 1, audit.GENESIS
    for checkpoint in AuditCheckpoint.objects.order_by("workspace", "seq").iterator(chunk_size=200):
        if checkpoint.workspace != workspace:  # the next chain starts
            workspace, expected_seq, link = checkpoint.workspace, 1, audit.GENESIS
        if checkpoint.seq != expected_seq:
            last = checkpoint.seq - 1
            span = f"{expected_seq}" if last == expected_seq else f"{expected_seq}-{last}"
            report.problems.append(f"{label(None, workspace=checkpoint.workspace, seq=span)}: missing (a gap in seq)")
        # the link across a gap cannot be checked
        problem = checkpoint_problem(checkpoint, link if checkpoint.seq == expected_seq else None)
        if problem:
            report.problems.append(problem)
        report.checkpoints += 1
        expected_seq, link = checkpoint.seq + 1, checkpoint.root
        name = label(checkpoint)
        for r, h, n in checkpoint.runs:
            lines.setdefault(str(r), []).append((name, h, int(n)))
    return lines


def verify_all(*, scope: str | None = None, run_id: str | None = None) -> Report:
    """Recompute every chain (of `scope` or one run) and every checkpoint; every problem in the report."""
    report = Report()
    lines = verify_checkpoints(report)
    prefixes = pruned_prefixes(lines, None if run_id is None else [run_id])
    seen: set[str] = set()
    for rid, events in runs_by_chain(scope, run_id):
        seen.add(rid)
        prefix = prefixes.get(rid, Prefix())
        walked = audit.walk(events, prefix.head)
        report.runs += 1
        report.events += walked.checked
        report.pruned += prefix.count > 0
        if prefix.problem or walked.problem:
            report.problems.append(prefix.problem or f"run {rid}: {walked.problem}")
            continue
        for name, head, count in lines.get(rid, []):
            problem = (
                None if count <= prefix.count else sealed_line_problem(rid, name, head, count, events, prefix.count)
            )
            if problem:
                report.problems.append(problem)
                break
    for rid in _sealed_runs_without_events(lines, seen, scope, run_id, prefixes):
        report.problems.append(f"run {rid}: sealed by {lines[rid][-1][0]}, but it has no events (deleted)")
    return report


def _sealed_runs_without_events(
    lines: Sealed, seen: set[str], scope: str | None, run_id: str | None, prefixes: dict[str, Prefix]
) -> list[str]:
    """Sealed runs whose events are all gone, but not by pruning (every line within a sealed pruned prefix);
    under --scope only those whose run row is in it (or gone too)."""
    gone = sorted(
        r for r in lines if r not in seen and (run_id is None or r == run_id) and not _all_pruned(r, lines, prefixes)
    )
    if scope is None or not gone:
        return gone
    elsewhere = {
        str(r)
        for r in Run.objects.filter(id__in=gone)
        .exclude(Q(scope=scope) | Q(scope__startswith=scope + "/"))
        .values_list("id", flat=True)
    }
    return [r for r in gone if r not in elsewhere]


def _all_pruned(rid: str, lines: Sealed, prefixes: dict[str, Prefix]) -> bool:
    prefix = prefixes.get(rid)
    return prefix is not None and prefix.problem is None and all(n <= prefix.count for _, _, n in lines[rid])
