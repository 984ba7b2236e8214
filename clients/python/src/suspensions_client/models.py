"""Typed results, parsed from the JSON the server sends (docs/api.md §1 and §7): runs, events, pauses, the
answers to claims with their admission and start receipts, pages.

Every result keeps the body it came from as `raw`, so a field this client does
not know yet is still at hand. Ids are strings, times are aware datetimes.
Pending-call `arguments` and an admitted `input` are strings holding JSON on
the wire, kept byte for byte: `arguments_json()` and `input_json()` parse them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qs, urlsplit

T = TypeVar("T")
JSON = dict[str, Any]


def when(value: Any) -> datetime | None:
    """An RFC 3339 time of the server (UTC, `Z`), or None."""
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def at(value: Any) -> datetime:
    moment = when(value)
    if moment is None:
        raise ValueError(f"expected an RFC 3339 time, got {value!r}")
    return moment


def optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def raw_field() -> Any:
    """The body a result was parsed from: kept, not shown, not compared."""
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class NewRun:
    """A run not registered yet, where a pause takes its run: the pause then registers it in the same request
    (`POST /runs` with `suspend`, docs/api.md, "One call to pause: `POST /runs` with `suspend`").

    `client.pause_for_approval(NewRun("support-agent"), calls, continuation)`
    is `register` then the pause in one round trip and one transaction: the
    answer is the pause, its run paused at `run_revision` 2. Sent with an
    `Idempotency-Key` (`idempotency_key`, or a new one), so a resend after a
    lost answer gets the same run and pause back.
    """

    agent_id: str
    scope: str | None = None
    session_id: str | None = None
    tags: tuple[str, ...] = ()
    idempotency_key: str | None = None


@dataclass(frozen=True, kw_only=True)
class Version:
    """The claim version `{run_id, suspension_id, run_revision}`: what the caller saw of a pause."""

    run_id: str
    suspension_id: str
    run_revision: int

    @classmethod
    def from_json(cls, data: JSON) -> Version:
        return cls(run_id=data["run_id"], suspension_id=data["suspension_id"], run_revision=data["run_revision"])

    def as_json(self) -> JSON:
        return {"run_id": self.run_id, "suspension_id": self.suspension_id, "run_revision": self.run_revision}


@dataclass(frozen=True, kw_only=True)
class Run:
    id: str
    scope: str
    agent_id: str
    session_id: str
    state: str
    revision: int
    error: str
    last_reason: str
    created_at: datetime
    updated_at: datetime
    suspension_id: str | None
    tags: tuple[str, ...] = ()
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> Run:
        return cls(
            id=data["id"],
            scope=data["scope"],
            agent_id=data["agent_id"],
            session_id=data["session_id"],
            state=data["state"],
            revision=data["revision"],
            error=data["error"],
            last_reason=data["last_reason"],
            created_at=at(data["created_at"]),
            updated_at=at(data["updated_at"]),
            suspension_id=optional_str(data.get("suspension_id")),
            tags=tuple(data.get("tags", ())),
            raw=data,
        )

    @property
    def run_id(self) -> str:
        return self.id

    @property
    def run_revision(self) -> int:
        return self.revision


@dataclass(frozen=True, kw_only=True)
class Event:
    id: int
    run_id: str
    scope: str
    kind: str
    actor: str
    revision: int
    data: JSON
    at: datetime
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> Event:
        return cls(
            id=data["id"],
            run_id=data["run_id"],
            scope=data["scope"],
            kind=data["kind"],
            actor=data["actor"],
            revision=data["revision"],
            data=data["data"],
            at=at(data["at"]),
            raw=data,
        )


@dataclass(frozen=True, kw_only=True)
class PendingCall:
    """A tool call waiting on the pause; `arguments` is the JSON text as the model wrote it."""

    id: str
    name: str
    arguments: str
    reply_with: str | None = None
    arguments_schema: JSON | None = None
    editable: bool = False
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> PendingCall:
        return cls(
            id=data["id"],
            name=data["name"],
            arguments=data["arguments"],
            reply_with=data.get("reply_with"),
            arguments_schema=data.get("arguments_schema"),
            editable=bool(data.get("editable", False)),
            raw=data,
        )

    def arguments_json(self) -> Any:
        return json.loads(self.arguments)


@dataclass(frozen=True, kw_only=True)
class Suspension:
    """A pause with its continuation (GET /suspensions/{id}, the answer to a suspend, a fresh start)."""

    id: str
    run_id: str
    scope: str
    reason: str
    pending: list[PendingCall]
    continuation: JSON
    expires_at: datetime | None
    created_at: datetime
    correlation_id: str | None
    run_revision: int | None = None
    run_state: str | None = None
    approval: JSON | None = None
    engine_version: str | None = None
    callback_url: str | None = None
    # The answer to a pause whose early results answered every call: the one-shot resume it made.
    resume: Claimed | None = None
    tags: tuple[str, ...] = ()
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> Suspension:
        resume = data.get("resume")
        return cls(
            id=data["id"],
            run_id=data["run_id"],
            scope=data["scope"],
            reason=data["reason"],
            pending=[PendingCall.from_json(c) for c in data["pending"]],
            continuation=data["continuation"],
            expires_at=when(data.get("expires_at")),
            created_at=at(data["created_at"]),
            correlation_id=data.get("correlation_id"),
            run_revision=data.get("run_revision"),
            run_state=data.get("run_state"),
            approval=data.get("approval"),
            engine_version=data.get("engine_version"),
            callback_url=data.get("callback_url"),
            resume=Claimed.from_json(resume) if resume else None,
            tags=tuple(data.get("tags", ())),
            raw=data,
        )

    @property
    def version(self) -> Version:
        """The claim version of this pause, as it was when read (needs `run_revision`)."""
        if self.run_revision is None:
            raise ValueError("this pause was read without its run's revision")
        return Version(run_id=self.run_id, suspension_id=self.id, run_revision=self.run_revision)


# A pause and the answer to a claim hold each other (a one-shot resume answers a suspend with its
# `resume`; a fresh start carries its `suspension`), so they and the receipts of an answer live here.


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
class SuspensionSummary:
    """A row of GET /suspensions and GET /approvals: the pause without its continuation."""

    id: str
    run_id: str
    scope: str
    agent_id: str
    reason: str
    pending: list[PendingCall]
    expires_at: datetime | None
    created_at: datetime
    run_revision: int
    run_state: str
    correlation_id: str | None
    tags: tuple[str, ...] = ()
    raw: JSON = raw_field()

    @classmethod
    def from_json(cls, data: JSON) -> SuspensionSummary:
        return cls(
            id=data["id"],
            run_id=data["run_id"],
            scope=data["scope"],
            agent_id=data["agent_id"],
            reason=data["reason"],
            pending=[PendingCall.from_json(c) for c in data["pending"]],
            expires_at=when(data.get("expires_at")),
            created_at=at(data["created_at"]),
            run_revision=data["run_revision"],
            run_state=data["run_state"],
            correlation_id=data.get("correlation_id"),
            tags=tuple(data.get("tags", ())),
            raw=data,
        )

    @property
    def version(self) -> Version:
        return Version(run_id=self.run_id, suspension_id=self.id, run_revision=self.run_revision)


@dataclass(frozen=True, kw_only=True)
class Page(Generic[T]):
    """One page of a list; pass `next_cursor` as `cursor=` for the next one (None on the last)."""

    results: list[T]
    next: str | None
    previous: str | None

    @property
    def next_cursor(self) -> str | None:
        return cursor_of(self.next)

    @property
    def previous_cursor(self) -> str | None:
        return cursor_of(self.previous)

    def __iter__(self) -> Iterator[T]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)


def cursor_of(link: str | None) -> str | None:
    if not link:
        return None
    values = parse_qs(urlsplit(link).query).get("cursor")
    return values[0] if values else None
