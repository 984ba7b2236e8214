"""What an Event announces to the outside (docs/api.md, "8. Push: webhooks"): the outbox rows' types and data, decided
here.

services/outbox.py writes the rows this module describes and fans them out;
the sweep (services/sql/expiry.py) builds the same data for its set-based insert.
Event data carries ids, scope, state, revision, reasons, digests, tool names
and the deadline; never a continuation, an admitted input or a secret.
"""

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from .. import digests
from ..models import AdmissionSource, Event, EventType, Reason, RunState

# The run's state once the event's change is written.
STATE_AFTER = {
    "suspended": RunState.PAUSED,
    "admitted": RunState.RUNNING,
    "denied": RunState.FAILED,
    "completed": RunState.COMPLETED,
    "failed": RunState.FAILED,
    "cancelled": RunState.CANCELLED,
    "closed": RunState.INCOMPLETE,
    "expired": RunState.EXPIRED,
}
# Admissions that wait for an engine's start; a one-shot resume starts in its own transaction.
WORK = frozenset({AdmissionSource.APPROVAL, AdmissionSource.AGENT_REPLY, AdmissionSource.DISPATCH})


def announced(row: Event, extra: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (type, data) pairs an event announces: none, one or two (an approval admits work too).

    `extra` is what the event's own data lacks: `agent_id` and `tools` for an
    approval pause, `reason` (the pause's) for a dispatch claim, `tags` for a
    new pause (else the event's own `announce_tags`). Tags are in `data.tags`
    when there are any (docs/api.md, "`POST /runs` — register (T1)").
    """
    tags = list(extra.get("tags", row.announce_tags))
    for type_, data in _announced(row, extra):
        yield type_, ({**data, "tags": tags} if tags else data)


def _announced(row: Event, extra: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    d = row.data
    base = {"run_id": str(row.run_id), "scope": row.scope, "revision": row.revision}
    if row.kind in STATE_AFTER:
        base["state"] = str(STATE_AFTER[row.kind])
    pause = {"suspension_id": d.get("suspension_id")}
    if row.kind == "suspended" and d.get("reason") == Reason.APPROVAL:
        yield (
            EventType.APPROVAL_REQUESTED,
            {
                **base,
                **pause,
                "reason": Reason.APPROVAL.value,
                "agent_id": extra.get("agent_id", ""),
                "tools": list(dict.fromkeys(extra.get("tools", []))),
                "deadline": d.get("expires_at"),
                "requested_by": row.actor,
            },
        )
    elif row.kind == "admitted":
        yield from _admitted(row, extra, {**base, **pause})
    elif row.kind == "voted":
        vote = {"votes": d.get("votes"), "quorum": d.get("quorum"), "voter": row.actor, **_acting(d)}
        yield EventType.APPROVAL_VOTE, {**base, **pause, "reason": "approval", **vote}
    elif row.kind == "denied":
        yield (
            EventType.APPROVAL_DECIDED,
            {**base, **pause, "reason": "approval", "decision": "deny", "decided_by": row.actor, **_acting(d)},
        )
        # A denial fails the run: engines that follow run.finished learn of it there too.
        yield EventType.RUN_FINISHED, base
    elif row.kind in ("completed", "failed", "cancelled"):
        yield EventType.RUN_FINISHED, base
    elif row.kind == "escalated" and "step" in d:
        # A chain's step (services.escalations); an on_expiry escalation is announced by the sweep's own SQL.
        step = {"step": d.get("step"), "after_seconds": d.get("after_seconds")}
        yield (
            EventType.APPROVAL_ESCALATED,
            {**base, **pause, "state": RunState.PAUSED.value, "reason": "approval", **step},
        )
    elif row.kind == "deadline_extended":
        moved = {"deadline": d.get("expires_at"), "previous_deadline": d.get("previous_expires_at")}
        yield (
            EventType.SUSPENSION_DEADLINE_EXTENDED,
            {
                **base,
                **pause,
                "state": RunState.PAUSED.value,
                "reason": d.get("reason"),
                **moved,
                "extended_by": row.actor,
            },
        )
    elif row.kind == "closed":
        yield EventType.RUN_CLOSED, {**base, **pause, "request_digest": d.get("request_digest")}


def _acting(d: Mapping[str, Any]) -> dict[str, Any]:
    """A delegate's decision names the person it was for (docs/identity.md, "Delegation"); others carry nothing new."""
    return {"acting_for": d["acting_for"]} if d.get("acting_for") else {}


def _admitted(row: Event, extra: Mapping[str, Any], base: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """An admission announces the approver's decision (an approval, or a dispatch that answered one) and the work
    an engine may now start."""
    d, source = row.data, row.data.get("source")
    answered = source == AdmissionSource.APPROVAL or (
        source == AdmissionSource.DISPATCH and extra.get("reason") == Reason.APPROVAL
    )
    if answered:
        decision = extra.get("decision") or ("approve" if source == AdmissionSource.APPROVAL else "respond")
        decided = {"reason": "approval", "decision": decision, "decided_by": row.actor, **_acting(d)}
        yield EventType.APPROVAL_DECIDED, {**base, **decided}
    if source in WORK:
        work = {"admission_id": d.get("admission_id"), "source": source, "request_digest": d.get("request_digest")}
        yield EventType.ADMISSION_CREATED, {**base, **work}


def expired_data(
    *, run_id: Any, suspension_id: Any, scope: str, revision: int, reason: str, deadline: datetime, admission_id: Any
) -> dict[str, Any]:
    """The data of a `suspension.expired` event, for the sweep's set-based insert."""
    data = {
        "run_id": str(run_id),
        "suspension_id": str(suspension_id),
        "scope": scope,
        "state": RunState.EXPIRED.value,
        "revision": revision,
        "reason": reason,
        "deadline": digests.rfc3339(deadline),
    }
    if admission_id is not None:
        data["admission_id"] = str(admission_id)
    return data


def escalated_data(
    *, run_id: Any, suspension_id: Any, scope: str, revision: int, deadline: datetime, previous: datetime
) -> dict[str, Any]:
    """The data of an `approval.escalated` event (docs/policies.md, "What happens at the deadline"): an expiry's, still
    paused, with both deadlines."""
    data = expired_data(
        run_id=run_id,
        suspension_id=suspension_id,
        scope=scope,
        revision=revision,
        reason=Reason.APPROVAL.value,
        deadline=deadline,
        admission_id=None,
    )
    return {**data, "state": RunState.PAUSED.value, "previous_deadline": digests.rfc3339(previous)}
