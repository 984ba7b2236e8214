"""Retention of the audit trail and legal holds (docs/auditors.md, "Retention and legal holds").

Events live in monthly partitions (migration 0026). `ensure_partitions` creates the months ahead (the beat,
hourly). `prune` drops the months wholly older than AUDIT_RETENTION_DAYS, in one transaction:

1. lock the holds (a hold made meanwhile waits for the commit, then holds what is left);
2. walk each pruned run's pruned events (a chain that no longer verifies is kept, and named in the record);
   a run under a hold, or whose pruned events are not the first of its chain, keeps them;
3. seal: one signed checkpoint per workspace with the line `run_id head count` of each pruned run (its
   last pruned hash and how many of its events went, from its first), so the kept trail is proved from it;
4. drop the months, put the kept runs' rows back (into the DEFAULT partition), record the pass (AuditPrune)
   and each run's prefix (PrunedRun).

Holds are configuration of auditors and operators: one short transaction on the hold row, no run lock.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction

from .. import audit, scopes, selectors
from ..clock import db_now
from ..exceptions import Forbidden, InvalidRequest, InvalidState, NotFound
from ..models import AuditPrune, Event, LegalHold, PrunedRun, Role
from ..principals import Principal
from . import audit as sealing
from .sql import partitions as sql

log = logging.getLogger("suspensions.retention")
MAX_REASON = 500
HOLDERS = (Role.AUDITOR, Role.OPERATOR)


# -- partitions -----------------------------------------------------------------------------------


def ensure_partitions(ahead: int | None = None) -> list[str]:
    """Create the events partitions of this month and the next `ahead` (AUDIT_PARTITIONS_AHEAD); returns those
    created. Idempotent; two at once: the loser's CREATE fails and the next hour's run finds them made."""
    today = db_now().date().replace(day=1)
    made = []
    with transaction.atomic(), connection.cursor() as cursor:
        for i in range((ahead or settings.AUDIT_PARTITIONS_AHEAD) + 1):
            month = date(today.year + (today.month - 1 + i) // 12, (today.month - 1 + i) % 12 + 1, 1)
            cursor.execute(sql.CREATE_MONTH, [month])
            name = cursor.fetchone()[0]
            if name:
                made.append(name)
    return made


def partitions() -> list[tuple[str, date | None]]:
    """Each partition of the events table and its month (None: DEFAULT), oldest first, DEFAULT last."""
    with connection.cursor() as cursor:
        cursor.execute(sql.PARTITIONS)
        found = [(name, sql.month_of(name)) for (name,) in cursor.fetchall()]
    return sorted(found, key=lambda p: (p[1] is None, p[1] or date.min))


# -- holds ----------------------------------------------------------------------------------------


def require_holder(principal: Principal) -> None:
    """403 for a principal that is neither an auditor nor an operator anywhere."""
    if not principal.superuser and not principal.scopes_with(*HOLDERS):
        raise Forbidden("the 'auditor' or 'operator' role is required")


def _may_hold(principal: Principal, scope: str) -> bool:
    return any(principal.can(role, scope) for role in HOLDERS)


def create_hold(*, principal: Principal, scope: str | None, run_id: UUID | None, reason: str) -> LegalHold:
    """A hold on every run of `scope` (and below), or on run `run_id`: exactly one of the two.

    Refuses before writing: neither or both (400), a bad scope or reason (400), a scope where the principal
    is neither auditor nor operator (403), a run it cannot see or not as auditor or operator (404).
    """
    require_holder(principal)
    if (scope is None) == (run_id is None):
        raise InvalidRequest("give exactly one of scope and run", errors={"scope": ["Exactly one of scope and run."]})
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON:
        raise InvalidRequest("reason is required", errors={"reason": [f"Say why, in at most {MAX_REASON}."]})
    if scope is not None and not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    if run_id is not None:
        scope = _run_scope(principal, run_id)
    elif scope is None or not _may_hold(principal, scope):
        raise Forbidden(f"the 'auditor' or 'operator' role is required in scope '{scope}'")
    with transaction.atomic():
        hold = LegalHold(run_id=run_id, reason=reason.strip(), created_by=principal.name, created_at=db_now())
        hold.stamp_scope(scope)
        hold.save(force_insert=True)
    log.info("legal hold %s on %s by %s", hold.id, run_id or scope, principal.name)
    return hold


def _run_scope(principal: Principal, run_id: UUID) -> str:
    """The scope of a run the principal holds as auditor or operator; 404 otherwise, leaking nothing."""
    run = selectors.runs(principal).filter(id=run_id).only("scope").first()
    if run is None or not _may_hold(principal, run.scope):
        raise NotFound(f"run {run_id} not found")
    return run.scope


def hold_of(principal: Principal, hold_id: UUID | str, *, lock: bool = False) -> LegalHold:
    """A hold in the principal's auditor or operator scopes (404 otherwise)."""
    require_holder(principal)
    query = selectors.legal_holds(principal).filter(pk=hold_id)
    found = (query.select_for_update() if lock else query).first()
    if found is None:
        raise NotFound(f"legal hold {hold_id} not found")
    return found


def release_hold(*, principal: Principal, hold_id: UUID | str) -> LegalHold:
    """End a hold (409 invalid_state if already released); the row stays as its record."""
    with transaction.atomic():
        hold = hold_of(principal, hold_id, lock=True)
        if hold.released_at is not None:
            raise InvalidState(f"legal hold {hold.id} was released at {hold.released_at.isoformat()}")
        hold.released_at, hold.released_by = db_now(), principal.name
        hold.save(update_fields=["released_at", "released_by"])
    log.info("legal hold %s released by %s", hold.id, principal.name)
    return hold


def held(run_id: str, scope: str, holds: Iterable[LegalHold]) -> bool:
    return any(str(h.run_id) == run_id if h.run_id else scopes.covers(h.scope, scope) for h in holds)


# -- pruning --------------------------------------------------------------------------------------


@dataclass
class Walked:
    """What the walk of the pruned events found: per run its line `[run_id, head, count]` by workspace, and the
    runs that keep their events (held, not a prefix, or a chain that no longer verifies)."""

    lines: dict[str, list[list[Any]]] = field(default_factory=dict)
    events: int = 0
    held: set[str] = field(default_factory=set)
    broken: list[str] = field(default_factory=list)


def prunable(now: datetime) -> list[tuple[str, date]]:
    """The month partitions wholly older than the retention, oldest first (none when retention is off)."""
    if not settings.AUDIT_RETENTION_DAYS:
        return []
    cutoff = now - timedelta(days=settings.AUDIT_RETENTION_DAYS)
    return [(n, m) for n, m in partitions() if m is not None and sql.month_end(m) <= cutoff]


def prune() -> AuditPrune | None:
    """Drop the months past the retention after sealing what goes (the module's docstring); the record, or None
    when nothing was due."""
    with transaction.atomic():
        now = db_now()
        months = prunable(now)
        if not months:
            return None
        before = sql.month_end(months[-1][1])
        with connection.cursor() as cursor:
            cursor.execute(sql.LOCK_HOLDS)
        walked = _walk(before, list(LegalHold.objects.filter(released_at__isnull=True)))
        checkpoints = sealing.seal(walked.lines, now) if walked.lines else []
        _record_prefixes(walked, checkpoints, now)
        _drop(months, before, walked.held)
        record = AuditPrune.objects.create(
            at=now,
            before=before,
            partitions=[n for n, _ in months],
            events=walked.events,
            runs=sum(len(v) for v in walked.lines.values()),
            held_runs=len(walked.held),
            checkpoints=[[c.workspace, c.seq] for c in checkpoints],
            problems=walked.broken,
        )
    log.info(
        "pruned %s events of %s runs before %s; %s runs kept", record.events, record.runs, before, record.held_runs
    )
    for problem in walked.broken:
        log.error("pruning kept a run whose chain does not verify: %s", problem)
    return record


def _walk(before: datetime, holds: list[LegalHold]) -> Walked:
    """Each run's events before `before`, checked from its sealed prefix (if pruned before) to its last."""
    walked = Walked()
    pruned = Event.objects.filter(at__lt=before).values("run_id")
    prefixes = {str(p.run_id): p for p in PrunedRun.objects.filter(run_id__in=pruned)}
    cut = _not_prefixes(before)
    for rid, events in sealing.runs_by_chain(None, None, before=before):
        prefix = prefixes.get(rid)
        start, count = (prefix.head, prefix.count) if prefix else (audit.GENESIS, 0)
        scope = events[0]["scope"]
        if rid in cut or held(rid, scope, holds):
            walked.held.add(rid)
            continue
        found = audit.walk(events, start)
        if found.problem:
            walked.held.add(rid)
            walked.broken.append(f"run {rid}: {found.problem}")
            continue
        walked.events += len(events)
        walked.lines.setdefault(scopes.path(scope)[0], []).append([rid, found.head, count + len(events)])
    return walked


def _not_prefixes(before: datetime) -> set[str]:
    """The runs with a kept event older (by id) than one they would lose: dropping theirs would cut their chain."""
    with connection.cursor() as cursor:
        cursor.execute(sql.NOT_PREFIXES, [before, before])
        return {str(r) for (r,) in cursor.fetchall()}


def _record_prefixes(walked: Walked, checkpoints: list[Any], now: datetime) -> None:
    seq = {c.workspace: c.seq for c in checkpoints}
    rows = [
        PrunedRun(run_id=rid, head=head, count=count, workspace=w, seq=seq[w], at=now)
        for w, lines in walked.lines.items()
        for rid, head, count in lines
    ]
    PrunedRun.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["run_id"], update_fields=["head", "count", "workspace", "seq", "at"]
    )


def _drop(months: list[tuple[str, date]], before: datetime, kept: set[str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql.KEEP, [before, sorted(kept)])
        for name, _ in months:
            cursor.execute(sql.DROP_MONTH.format(name=connection.ops.quote_name(name)))
        cursor.execute(sql.EMPTY_DEFAULT, [before])
        cursor.execute(sql.PUT_BACK)
