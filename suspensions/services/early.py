"""Early results (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"): a tool result kept before
the pause that waits for it, and the resume it completes.

An engine that runs a tool in the background may get its result before it has
stored the pause. The result is kept against (run, call id); when an
`external_tool` pause is stored whose pending calls all have unexpired early
results, or when the last missing one arrives while such a pause is live,
that pause is resumed in the same transaction by the one-shot resume's own
writes (resumes.write_one_shot), as if the engine had sent those results in
pending order; the checks its door would make are made here, before the
first write (`waiting_for`, `completion`). Both the keeping and the pause
lock the run, so an early result racing its pause gives exactly one resume
whichever comes first.

A used early result stays, marked with the pause it resumed, until its ttl
ends: the same result again is then still a replay. The sweep deletes every
early result past its `expires_at`, and every early result of a run that has
ended (`drop_expired`).

A run holds at most EARLY_RESULTS_PER_RUN unexpired early results (used ones
count until their ttl ends) of at most EARLY_RESULT_BYTES_PER_RUN together:
past either, a new one is refused before anything is written (`429
throttled`, `413 input_too_large`), and the same result again still replays.
"""

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db.models import Count, Exists, Func, IntegerField, Min, OuterRef, Q, Sum

from .. import digests
from ..exceptions import AdmissionConflict, InputTooLarge, InvalidState, Throttled
from ..models import TERMINAL_STATES, EarlyResult, Reason, Role, Run, RunState, Suspension
from ..principals import Principal
from ..wire.requests import EARLY_MAX_TTL
from .claiming import Door, Replay, through
from .claims import Claimed, Locked, Version, bounded_input
from .resumes import Resumable, write_one_shot

DEFAULT_TTL = 3600
MAX_TTL = EARLY_MAX_TTL


@dataclass
class Kept:
    """The answer to keeping an early result: the row, whether this call made it, the resume it completed."""

    early: EarlyResult
    fresh: bool
    resume: Claimed | None = None


def early_digest(run_id: UUID | str, call_id: str, content_text: str) -> str:
    """Lowercase hex SHA-256 of the canonical JSON of `{run_id, call_id, content}`."""
    return digests.digest({"run_id": str(run_id), "call_id": call_id, "content": json.loads(content_text)})


def waiting_for(t: Locked, live: Suspension | None) -> list[str] | None:
    """The call ids an `external_tool` pause still waits for, when early results may resume it; else None.

    A flow wait is resumed only through its own door; a pause past its
    deadline belongs to the sweeper.
    """
    if live is None or t.run.state != RunState.PAUSED or live.reason != Reason.EXTERNAL_TOOL or live.correlation_id:
        return None
    if live.expires_at is not None and live.expires_at <= t.now:
        return None
    return [call["id"] for call in json.loads(live.pending)]


def usable(run_id: UUID, call_ids: list[str], now: datetime) -> dict[str, EarlyResult]:
    """The unused, unexpired early results of `run_id` for `call_ids`, by call id (under the run lock)."""
    rows = EarlyResult.objects.filter(run_id=run_id, call_id__in=call_ids, suspension_id=None, expires_at__gt=now)
    return {row.call_id: row for row in rows}


@dataclass(frozen=True)
class Completion:
    """A resume the early results complete, checked before any write: its rows and results, in pending order,
    and their retained input. `resume` writes it."""

    rows: list[EarlyResult]
    results: list[dict[str, Any]]
    input_text: str

    def resume(self, t: Locked, live: Suspension) -> Claimed:
        """The one-shot resume of `live` with these results (its step 5, resumes.write_one_shot); marks them used
        by it. Its checks were made by the step 4 that found it, before the first write: an `external_tool`
        pause, no flow wait, before its deadline (`KeepEarly.check` by `waiting_for`; `runs.Suspend.check` by
        `on_pause`, for the pause it is about to store), every call answered in pending order (`completion`),
        and no drift (the engine sent no version)."""
        version = Version(run_id=t.run.id, suspension_id=live.id, run_revision=t.run.revision)
        found = Resumable(live=live, ordered=self.results, drift={})
        claimed = write_one_shot(t, found, version=version, input_text=self.input_text)
        for row in self.rows:
            t.writes.update(EarlyResult, {"id": row.pk}, suspension_id=live.id)
            row.suspension_id = live.id
        return claimed


def completion(call_ids: list[str], rows: dict[str, EarlyResult]) -> Completion | None:
    """The resume `rows` complete when they answer every call of `call_ids` (in pending order); else None.

    Results whose encoding exceeds the input bound are left for the engine's
    own resume, which answers its 413.
    """
    if not call_ids or any(call_id not in rows for call_id in call_ids):
        return None
    results = [{"call_id": call_id, "content": json.loads(rows[call_id].content)} for call_id in call_ids]
    try:
        input_text = bounded_input(results)
    except InputTooLarge:
        return None
    return Completion(rows=[rows[call_id] for call_id in call_ids], results=results, input_text=input_text)


def on_pause(t: Locked, pending: list[dict[str, Any]], reason: str) -> Completion | None:
    """For a pause about to be stored: the resume its early results complete, if any. No statement unless
    the run ever had an early result (`Run.has_early_results`, read with the run lock)."""
    if reason != Reason.EXTERNAL_TOOL or not t.run.has_early_results:
        return None
    call_ids = [call["id"] for call in pending]
    return completion(call_ids, usable(t.run.id, call_ids, t.now))


@dataclass(frozen=True)
class New:
    """Step 3 of keeping an early result that is not a replay: its digest, and the expired row it replaces."""

    digest: str
    stale: EarlyResult | None


@dataclass(frozen=True)
class Keeping:
    """What keeping's checks found: the row to insert, the expired one it replaces, and the resume it completes
    with the live pause it resumes."""

    early: EarlyResult
    stale: EarlyResult | None
    completes: tuple[Completion, Suspension] | None


@dataclass(frozen=True)
class KeepEarly(Door[New, Keeping, Kept]):
    """Keep one early result; resume the live pause when it was the last one missing."""

    call_id: str
    content_text: str
    ttl: int
    role = Role.ENGINE

    def earlier(self, t: Locked) -> Replay[Kept] | New:
        if t.run.state not in (RunState.RUNNING, RunState.PAUSED):
            raise InvalidState(f"run {t.run.id} is {t.run.state}: no pause of it will wait for a result")
        digest = early_digest(t.run.id, self.call_id, self.content_text)
        existing = EarlyResult.objects.filter(run_id=t.run.id, call_id=self.call_id).first()
        if existing is None:
            return New(digest, stale=None)
        if existing.suspension_id is None and existing.expires_at <= t.now:
            return New(digest, stale=existing)  # expired, not yet swept: replaced as if it were gone
        if existing.digest == digest:
            return Replay(Kept(early=existing, fresh=False))
        raise AdmissionConflict(
            f"call {self.call_id} already has a different early result",
            request_digest=digest,
            admitted_digest=existing.digest,
        )

    def check(self, t: Locked, new: New) -> Keeping:
        early = self.row(t, new.digest)
        if t.run.has_early_results:  # a run's first early result meets no allowance: no statement for it
            refuse_past_allowance(t, len(self.content_text.encode("utf-8")))
        live = t.live
        call_ids = waiting_for(t, live)
        if live is None or call_ids is None or self.call_id not in call_ids:
            return Keeping(early, new.stale, completes=None)
        rows = usable(t.run.id, [c for c in call_ids if c != self.call_id], t.now)
        rows[self.call_id] = early
        completes = completion(call_ids, rows)
        return Keeping(early, new.stale, completes=None if completes is None else (completes, live))

    def row(self, t: Locked, digest: str) -> EarlyResult:
        row = EarlyResult(
            run_id=t.run.id,
            call_id=self.call_id,
            content=self.content_text,
            digest=digest,
            created_at=t.now,
            expires_at=t.now + timedelta(seconds=self.ttl),
        )
        row.stamp_scope(t.run.scope)
        return row

    def write(self, t: Locked, found: Keeping) -> Kept:
        if found.stale is not None:
            t.writes.delete(EarlyResult, found.stale.pk)
        t.writes.insert([found.early])
        if not t.run.has_early_results:
            t.writes.update(Run, {"id": t.run.pk}, has_early_results=True)
            t.run.has_early_results = True
        if found.completes is None:
            return Kept(early=found.early, fresh=True)
        completes, live = found.completes
        return Kept(early=found.early, fresh=True, resume=completes.resume(t, live))


class OctetLength(Func):
    """PostgreSQL's size of a text in bytes (its UTF-8 encoding), as the input bound measures it."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()


def refuse_past_allowance(t: Locked, size: int) -> None:
    """Refuse a new early result past the run's allowance of unexpired ones (under the run lock, before any write).

    Past the count: Throttled, with Retry-After until the oldest expires. Past
    the bytes: InputTooLarge.
    """
    held = EarlyResult.objects.filter(run_id=t.run.id, expires_at__gt=t.now).aggregate(
        count=Count("pk"), size=Sum(OctetLength("content")), first_end=Min("expires_at")
    )
    most, budget = settings.EARLY_RESULTS_PER_RUN, settings.EARLY_RESULT_BYTES_PER_RUN
    if held["count"] >= most:
        raise Throttled(
            f"run {t.run.id} holds {held['count']} unexpired early results, its allowance "
            f"(EARLY_RESULTS_PER_RUN = {most}); resume its pause with its results instead",
            retry_after=math.ceil((held["first_end"] - t.now).total_seconds()),
        )
    if (held["size"] or 0) + size > budget:
        raise InputTooLarge(
            f"run {t.run.id} holds {held['size']} bytes of unexpired early results; {size} more would pass "
            f"its allowance of {budget} bytes (EARLY_RESULT_BYTES_PER_RUN)"
        )


def keep_early_result(
    *, principal: Principal, run_id: UUID | str, call_id: str, content: Any, ttl_seconds: int | None = None
) -> Kept:
    """Keep an early result of `call_id` for run `run_id`
    (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"); resume the live pause it completes.

    Locks the run. The same result again answers the kept one (fresh=False);
    another content for that call is admission_conflict naming both digests;
    a finished run is invalid_state.
    """
    content_text = bounded_input(content)  # the content's canonical JSON, measured against the input bound
    door = KeepEarly(
        call_id=call_id, content_text=content_text, ttl=DEFAULT_TTL if ttl_seconds is None else ttl_seconds
    )
    return through(door, principal=principal, run_id=run_id)


def drop_expired(now: datetime) -> int:
    """The sweep's part: delete every early result past its ttl, used or not, and every one of a run that has
    ended (one DELETE). Returns how many.

    Nothing reads an ended run's early results (keeping one, even the same one
    again, is invalid_state once the run ended), so they go at the next sweep
    rather than in each ending's transaction, which then pays nothing for them.
    """
    ended = Run.objects.filter(pk=OuterRef("run_id"), state__in=TERMINAL_STATES)
    deleted, _ = EarlyResult.objects.filter(Q(expires_at__lte=now) | Exists(ended)).delete()
    return deleted
