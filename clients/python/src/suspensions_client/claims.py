"""Typed results, continued: the latest admission, and the answers to decisions and early results.

`Admission`, `StartReceipt` and `Claimed` live in models.py, beside the `Suspension` a claim's answer
carries (and that carries one); they are imported here, so `suspensions_client.claims.Claimed` still names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .models import JSON, Admission, Claimed, StartReceipt, at, raw_field

__all__ = ["Admission", "Claimed", "Denial", "EarlyResult", "LatestAdmission", "StartReceipt", "Vote"]


@dataclass(frozen=True, kw_only=True)
class LatestAdmission(Admission):
    """GET /runs/{id}/admissions/latest: the latest admission and its start receipt (None until started)."""

    start: StartReceipt | None = None

    @classmethod
    def from_json(cls, data: JSON) -> LatestAdmission:
        start = data.get("start")
        return cls(**cls.fields_of(data), start=StartReceipt.from_json(start) if start else None)


@dataclass(frozen=True, kw_only=True)
class Denial:
    """The answer to a deny: the run failed with `rejected: <reason>`."""

    decision: str
    run_id: str
    suspension_id: str
    run_state: str
    run_revision: int
    reason: str
    fresh: bool
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> Denial:
        return cls(
            decision=data["decision"],
            run_id=data["run_id"],
            suspension_id=data["suspension_id"],
            run_state=data["run_state"],
            run_revision=data["run_revision"],
            reason=data["reason"],
            fresh=data["fresh"],
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class DecisionResult:
    """One item of a list of decisions (`decide_many`): what its single decide answered.

    `decision` is the `Claimed`, `Denial` or `Vote` of a decision that went through
    (or replayed); `error` the refusal (a `SuspensionsError`, not raised) of one that did not.
    """

    approval_id: str
    status: int
    decision: Claimed | Denial | Vote | None = None
    error: Exception | None = None
    raw: JSON = raw_field()


@dataclass(frozen=True, kw_only=True)
class Vote:
    """The answer 202 to an approve short of the pause's quorum: recorded, the run still paused, nothing admitted.

    The same approver's identical vote again answers it with `fresh` false.
    """

    votes: int
    quorum: int
    voters: list[str]
    run_id: str | None = None
    suspension_id: str | None = None
    run_state: str | None = None
    run_revision: int | None = None
    fresh: bool = True
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> Vote:
        return cls(
            votes=data["votes"],
            quorum=data["quorum"],
            voters=list(data.get("voters") or []),
            run_id=data.get("run_id"),
            suspension_id=data.get("suspension_id"),
            run_state=data.get("run_state"),
            run_revision=data.get("run_revision"),
            fresh=bool(data.get("fresh", True)),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class EarlyResult:
    """A tool result kept before its pause (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause").

    `fresh` is false when the same result was kept already. `resume` is the
    one-shot resume this result completed, when it was the last one a live
    `external_tool` pause waited for: execute from it as from `resume`'s answer.
    """

    run_id: str
    call_id: str
    digest: str
    expires_at: datetime
    fresh: bool
    resume: Claimed | None = None
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> EarlyResult:
        resume = data.get("resume")
        return cls(
            run_id=data["run_id"],
            call_id=data["call_id"],
            digest=data["digest"],
            expires_at=at(data["expires_at"]),
            fresh=data["fresh"],
            resume=Claimed.from_json(resume) if resume else None,
            raw=data,
        )
