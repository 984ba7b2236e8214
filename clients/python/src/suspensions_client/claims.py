"""Typed results, continued: admission and start receipts, and the answers to claims and decisions."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .models import JSON, Suspension, Version, at, raw_field


@dataclass(frozen=True, kw_only=True)
class Admission:
    """An admission receipt; list rows and `latest` also carry its `state` now."""

    id: str
    run_id: str
    suspension_id: str
    scope: str
    source: str
    version: Version
    request_digest: str
    suspension_digest: str
    claimed_revision: int
    admitted_at: datetime
    actor: str
    valid: bool
    fresh: bool
    state: str | None = None
    raw: JSON = raw_field()

    @classmethod
    def fields_of(cls, data: JSON) -> JSON:
        return {
            "id": data["id"],
            "run_id": data["run_id"],
            "suspension_id": data["suspension_id"],
            "scope": data["scope"],
            "source": data["source"],
            "version": Version.from_json(data["version"]),
            "request_digest": data["request_digest"],
            "suspension_digest": data["suspension_digest"],
            "claimed_revision": data["claimed_revision"],
            "admitted_at": at(data["admitted_at"]),
            "actor": data["actor"],
            "valid": data["valid"],
            "fresh": data["fresh"],
            "state": data.get("state"),
            "raw": data,
        }

    @classmethod
    def from_json(cls, data: JSON) -> Admission:
        return cls(**cls.fields_of(data))


@dataclass(frozen=True, kw_only=True)
class StartReceipt:
    run_id: str
    suspension_id: str
    run_revision: int
    request_digest: str
    started_at: datetime
    digest: str
    valid: bool
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> StartReceipt:
        return cls(
            run_id=data["run_id"],
            suspension_id=data["suspension_id"],
            run_revision=data["run_revision"],
            request_digest=data["request_digest"],
            started_at=at(data["started_at"]),
            digest=data["digest"],
            valid=data["valid"],
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class LatestAdmission(Admission):
    """GET /runs/{id}/admissions/latest: the latest admission and its start receipt (None until started)."""

    start: StartReceipt | None = None

    @classmethod
    def from_json(cls, data: JSON) -> LatestAdmission:
        start = data.get("start")
        return cls(**cls.fields_of(data), start=StartReceipt.from_json(start) if start else None)


@dataclass(frozen=True, kw_only=True)
class Claimed:
    """The answer to a claim (resume, approve, admit, dispatch) or a start.

    `fresh` is true only in the answer that did the work. Only a fresh grant of
    execution (a start, a one-shot resume) carries `suspension` (with the
    continuation) and `input` or `results`; a replay never does.
    """

    run_id: str
    run_revision: int
    run_state: str
    fresh: bool
    admission: Admission | None = None
    start: StartReceipt | None = None
    suspension: Suspension | None = None
    results: list[Any] | None = None
    input: str | None = None
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> Claimed:
        admission, start, suspension = data.get("admission"), data.get("start"), data.get("suspension")
        return cls(
            run_id=data["run_id"],
            run_revision=data["run_revision"],
            run_state=data["run_state"],
            fresh=data["fresh"],
            admission=Admission.from_json(admission) if admission else None,
            start=StartReceipt.from_json(start) if start else None,
            suspension=Suspension.from_json(suspension) if suspension else None,
            results=data.get("results"),
            input=data.get("input"),
            raw=data,
        )

    def input_json(self) -> Any:
        """The admitted input, parsed (None when this answer carries none)."""
        return None if self.input is None else json.loads(self.input)


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
