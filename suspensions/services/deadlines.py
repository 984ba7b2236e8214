"""An operator gives a live pause more time (docs/api.md, "`POST /suspensions/{id}/extend` — more time"): its deadline
moves later, once per request, through the one claim path.

The move changes no revision: the version every approver and engine holds
stays valid, exactly as an `escalate` policy's move at the deadline
(docs/policies.md, "What happens at the deadline"). It is bounded by the
maximum TTL (ten years from now, as a new pause's `ttl_seconds`) and, on an
approval, by the duties its floors set: with `exclude_requester` whoever
stored the pause may not extend it (it would keep its own request open), and
with `require_linked_person` only a person may. The `deadline_extended`
event and its `suspension.deadline_extended` announcement are written in the
same transaction; the approval's 80% reminder may go out again.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from .. import digests, selectors
from ..exceptions import InvalidRequest, InvalidState, NotFound
from ..models import Approval, ApprovalStatus, Reason, Role, Run, RunState, Suspension
from ..principals import Principal
from .approval_checks import check_duties
from .claiming import Door, Replay, through
from .claims import Locked, event, write_events

# The latest deadline a pause may have, counted from now: a new pause's ttl_seconds bound
# (docs/api.md, "5. Digests and bounds").
MAX_TTL = 10 * 365 * 86400


@dataclass(frozen=True)
class Extended:
    """The pause with its new deadline (`deadline`, its `expires_at` now); `fresh` is False for the same `until` again
    (nothing written)."""

    run: Run
    suspension: Suspension
    deadline: datetime
    previous: datetime
    fresh: bool = True


@dataclass(frozen=True)
class Moving:
    """What the checks found: the live pause, its deadline now and the one it moves to."""

    live: Suspension
    previous: datetime
    deadline: datetime


@dataclass(frozen=True)
class Extend(Door[Suspension, Moving, Extended]):
    """Move a live pause's deadline later, by `seconds` from its current deadline or to `until`."""

    suspension_id: UUID
    seconds: int | None
    until: datetime | None
    reason: str
    role = Role.OPERATOR

    def earlier(self, t: Locked) -> Replay[Extended] | Suspension:
        live = t.live
        if live is None or live.id != self.suspension_id or t.run.state != RunState.PAUSED:
            raise InvalidState(f"pause {self.suspension_id} is no longer live")
        if self.until is not None and live.expires_at == self.until and live.expires_at > t.now:
            # The same `until` again: already there, nothing to write (a retry without an Idempotency-Key).
            live.run = t.run
            return Replay(Extended(run=t.run, suspension=live, deadline=self.until, previous=self.until, fresh=False))
        return live

    def check(self, t: Locked, live: Suspension) -> Moving:
        current = live.expires_at
        if current is None:
            raise InvalidState(f"pause {live.id} has no deadline to extend")
        if current <= t.now:  # the sweeper's from its deadline on (docs/api.md, "4. Claims and recovery")
            raise InvalidState(f"pause {live.id} passed its deadline {digests.rfc3339(current)}")
        field = "until" if self.until is not None else "seconds"
        deadline = self.until if self.until is not None else current + timedelta(seconds=self.seconds or 0)
        if deadline <= current:
            raise InvalidRequest(
                "the new deadline must be later than the current one",
                errors={field: [f"Must be later than the current deadline {digests.rfc3339(current)}."]},
            )
        if deadline > t.now + timedelta(seconds=MAX_TTL):
            raise InvalidRequest(
                "the new deadline is more than ten years away",
                errors={field: [f"The deadline may be at most {MAX_TTL} seconds from now."]},
            )
        if live.reason == Reason.APPROVAL:
            record = Approval.objects.filter(pk=live.id, status=ApprovalStatus.PENDING).first()
            if record is not None:
                check_duties(t.principal, record)
        return Moving(live, current, deadline)

    def write(self, t: Locked, found: Moving) -> Extended:
        live, previous, deadline = found.live, found.previous, found.deadline
        t.writes.update(Suspension, {"id": live.pk}, None, expires_at=deadline, deadline=deadline)
        if live.reason == Reason.APPROVAL:
            pending = {"suspension_id": live.pk, "status": ApprovalStatus.PENDING}
            at_risk = Approval.at_risk_from(live.created_at, deadline)
            t.writes.update(Approval, pending, None, expires_at=deadline, reminded_at=None, at_risk_at=at_risk)
        extended = event(
            t.run,
            "deadline_extended",
            t.principal.name,
            t.now,
            suspension_id=str(live.id),
            reason=live.reason,
            previous_expires_at=digests.rfc3339(previous),
            expires_at=digests.rfc3339(deadline),
            extend_seconds=int((deadline - previous).total_seconds()),
            note=self.reason,
        )
        write_events(t.writes, extended)
        # The answer shows the pause as it now is: the row the lock read, its deadline moved as written.
        live.expires_at, live.deadline = deadline, deadline
        live.run = t.run
        return Extended(run=t.run, suspension=live, deadline=deadline, previous=previous)


def extend_deadline(
    *,
    principal: Principal,
    suspension_id: UUID | str,
    reason: str,
    seconds: int | None = None,
    until: datetime | None = None,
) -> Extended:
    """Move a live pause's deadline later (role operator in its scope); the pause with its new deadline.

    Refusals, all before the first write: exactly one of `seconds` and `until`,
    and a reason (400); the pause unknown or out of sight (404); no operator
    role (403); no longer live, without a deadline or past it (409
    invalid_state); a deadline not later than the current one, or more than
    ten years from now (400); the approval's duties (403 separation_of_duties,
    person_required). The same `until` again answers the pause, not fresh.
    """
    if (seconds is None) == (until is None):
        raise InvalidRequest("give exactly one of seconds and until", errors={"seconds": ["Give seconds or until."]})
    if not reason.strip():
        raise InvalidRequest("an extension needs a reason", errors={"reason": ["An extension needs a reason."]})
    run_id = _run_of(principal, suspension_id)
    door = Extend(suspension_id=UUID(str(suspension_id)), seconds=seconds, until=until, reason=reason)
    return through(door, principal=principal, run_id=run_id)


def _run_of(principal: Principal, suspension_id: UUID | str) -> UUID:
    """The run of a pause the principal may see (404 otherwise). A pause that is gone is still found by its approval
    record or the admission that claimed it, so extending it is the 409 of a pause no longer live."""
    places = (
        selectors.suspensions(principal).filter(pk=suspension_id),
        Approval.objects.filter(principal.scope_q(), pk=suspension_id),
        selectors.admissions(principal).filter(suspension_id=suspension_id),
    )
    for rows in places:  # lazy: the next is read only when the one before found nothing
        run_id = rows.values_list("run_id", flat=True).first()
        if run_id is not None:
            return run_id  # type: ignore[no-any-return]
    raise NotFound(f"suspension {suspension_id} not found")
