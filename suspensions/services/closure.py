"""T10: an operator closes an uncertain start as `incomplete`, with a proof
(docs/api.md, "7.6 Closure of an uncertain start").

A start whose engine died leaves the run `running` forever. Closing it never
accepts output, refunds usage or permits a replay: it only ends the run and
bumps the revision, which fences the original worker (its later complete,
fail or suspend is a version conflict, its start retry resume_already_started).

Refusal order, and why:
0. a request that is malformed whoever sends it (version of another run,
   unknown schema_version, a time without offset or outside years 1..9999
   in UTC): 400 invalid_request before any row is read;
1. scope (404) and the operator role (403): a stored receipt is not permission,
   so even a replay is refused to someone who may not close the run now;
2. the receipt of an earlier closure of the same pause: the identical request
   answers it (fresh=False), even after the proof expired; any other is
   closure_conflict;
3. the run must be `running` with its latest admission started and unfinished
   (invalid_state);
4. the version, admission and start digests must bind that latest admission
   and start, and the revision must be current (version_conflict, "the revision or pause you hold is stale" in
   docs/api.md, "6. Error codes");
5. the proof window `observed_at <= now < expires_at` on the database clock
   (400 invalid_request with a field error: docs/api.md, "6. Error codes" has no dedicated code).
"""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db import connection, transaction

from .. import digests, selectors
from ..exceptions import ClosureConflict, InvalidRequest, InvalidState, NotFound, VersionConflict
from ..models import Admission, AdmissionState, ClosureReceipt, Role, Run, RunState
from ..principals import Principal
from ..wire.requests import CLOSURE_SCHEMA_VERSION
from .claiming import Door, Replay, through
from .claims import Locked, Version, advance, event, write_events

SCHEMA_VERSION = CLOSURE_SCHEMA_VERSION
# docs/decisions.md, "Closure of uncertain starts": each closure operation gives up after 30 s instead of queueing
# behind a stuck writer for ever; the database error becomes a 503.
TIMEOUT = "30s"


@dataclass(frozen=True)
class ClosureRequest:
    """The closure request (docs/api.md, "7.6 Closure of an uncertain start") as filed; the actor is never part of it
    (it is the principal)."""

    schema_version: int
    version: Version
    admission_digest: str
    start_digest: str
    run_revision: int
    issuer: str
    issuer_revision: str
    proof_ref: str
    proof_digest: str
    observed_at: datetime
    expires_at: datetime

    def canonical_text(self, *, scope: str, actor: str) -> str:
        """The retained request: canonical JSON with the run's scope and the authenticated actor."""
        body = {
            "schema_version": self.schema_version,
            "scope": scope,
            "version": self.version.as_dict(),
            "admission_digest": self.admission_digest,
            "start_digest": self.start_digest,
            "run_revision": self.run_revision,
            "actor": actor,
            "issuer": self.issuer,
            "issuer_revision": self.issuer_revision,
            "proof_ref": self.proof_ref,
            "proof_digest": self.proof_digest,
            "observed_at": digests.rfc3339(self.observed_at),
            "expires_at": digests.rfc3339(self.expires_at),
        }
        return digests.canonical(body).decode("utf-8")


@dataclass
class Closed:
    """What a closure answers: the run as it is now, the receipt, and whether this call created it."""

    run: Run
    receipt: ClosureReceipt
    fresh: bool = True


def _bound_time() -> None:
    # SET LOCAL: the timeouts end with the transaction, so nothing is left on a pooled connection.
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{TIMEOUT}'")
        cursor.execute(f"SET LOCAL statement_timeout = '{TIMEOUT}'")


def _uncertain_start(principal: Principal, run: Run, request: ClosureRequest) -> Admission:
    """The started, unfinished admission the request binds; raise the refusal otherwise."""
    if run.state != RunState.RUNNING:
        raise InvalidState(f"run {run.id} is {run.state}; only a running run can be closed")
    latest, start = selectors.latest_admission(principal, run.id, with_input=False)
    if latest is None or start is None or not selectors.is_uncertain_start(run, latest, start):
        raise InvalidState(f"run {run.id} has no started execution to close")
    current = Version(run_id=run.id, suspension_id=latest.suspension_id, run_revision=latest.version_revision)
    if request.version.as_dict() != current.as_dict():
        raise VersionConflict(
            f"the run's latest admission is for pause {latest.suspension_id}", version=current.as_dict()
        )
    if request.admission_digest != latest.request_digest:
        raise VersionConflict("admission_digest does not bind the run's latest admission")
    if request.start_digest != start.digest:
        raise VersionConflict("start_digest does not bind the run's latest start")
    if request.run_revision != run.revision:
        raise VersionConflict(f"run {run.id} is at revision {run.revision}, not {request.run_revision}")
    return latest


def _check_times(request: ClosureRequest) -> None:
    """Any date out of range is a 400 (docs/api.md, "5. Digests and bounds"), whichever door built the request."""
    for name in ("observed_at", "expires_at"):
        if not digests.utc_or_none(getattr(request, name)):
            raise InvalidRequest(
                f"{name} is not a time this service can hold",
                errors={name: ["Give a time with its offset, within years 1 to 9999 in UTC."]},
            )


def _check_proof_window(request: ClosureRequest, now: datetime) -> None:
    if request.observed_at > now:
        raise InvalidRequest(
            "the proof is not valid yet", errors={"observed_at": ["Observed after the service's current time."]}
        )
    if now >= request.expires_at:
        raise InvalidRequest(
            "the proof has expired",
            errors={"expires_at": [f"The proof expired at {digests.rfc3339(request.expires_at)}."]},
        )


def _write_closure(t: Locked, admission: Admission, request: ClosureRequest) -> ClosureReceipt:
    run, actor, now = t.run, t.principal.name, t.now
    text = request.canonical_text(scope=run.scope, actor=actor)
    request_digest = digests.sha256_hex(text)
    advance(t, RunState.INCOMPLETE, error=f"closed as incomplete by {actor}")
    t.writes.update(Admission, {"id": admission.pk}, state=AdmissionState.CLOSED)
    closed = event(
        run,
        "closed",
        actor,
        now,
        suspension_id=str(admission.suspension_id),
        request_digest=request_digest,
        issuer=request.issuer,
        proof_ref=request.proof_ref,
    )
    write_events(t.writes, closed)
    t.writes.send()  # now, not after `write`: the receipt names its event, whose key the database generates
    receipt = ClosureReceipt(
        run_id=run.id,
        suspension_id=admission.suspension_id,
        request=text,
        request_digest=request_digest,
        run_revision=run.revision,
        event_id=closed.id,
        actor=actor,
        closed_at=now,
    )
    receipt.stamp_scope(run.scope)
    receipt.digest = digests.closure_digest(receipt)
    t.writes.insert([receipt])
    return receipt


@dataclass(frozen=True)
class Close(Door[None, Admission, Closed]):
    """T10 through the one claim path: step 3 replays the identical closure, step 4 binds the uncertain start."""

    request: ClosureRequest
    role = Role.OPERATOR

    def begin(self) -> None:
        _bound_time()

    def earlier(self, t: Locked) -> Replay[Closed] | None:
        digest = digests.sha256_hex(self.request.canonical_text(scope=t.run.scope, actor=t.principal.name))
        existing = ClosureReceipt.objects.filter(run_id=t.run.id, suspension_id=self.request.version.suspension_id)
        receipt = existing.first()
        if receipt is None:
            return None
        if receipt.request_digest != digest:
            raise ClosureConflict(
                f"pause {receipt.suspension_id} was already closed by a different request",
                request_digest=digest,
                closed_digest=receipt.request_digest,
            )
        return Replay(Closed(run=t.run, receipt=receipt, fresh=False))

    def check(self, t: Locked, current: None) -> Admission:
        admission = _uncertain_start(t.principal, t.run, self.request)
        _check_proof_window(self.request, t.now)
        return admission

    def write(self, t: Locked, admission: Admission) -> Closed:
        return Closed(run=t.run, receipt=_write_closure(t, admission, self.request))


def close_run(*, principal: Principal, run_id: UUID | str, request: ClosureRequest) -> Closed:
    """T10 close: a running, started, unfinished run ends `incomplete`, rev+1, with receipt and event.

    Locks the run under a 30 s lock and statement timeout. The identical request
    (same actor included) again answers the original receipt with fresh=False,
    even after the proof expired; a different request for the same pause is
    closure_conflict. Authority is checked before either.
    """
    if str(request.version.run_id) != str(run_id):
        raise InvalidRequest(
            "version.run_id must be the run in the path", errors={"version": {"run_id": ["Mismatch."]}}
        )
    if request.schema_version != SCHEMA_VERSION:
        raise InvalidRequest("unknown schema_version", errors={"schema_version": [f"Must be {SCHEMA_VERSION}."]})
    _check_times(request)
    return through(Close(request=request), principal=principal, run_id=run_id)


def closure_of(*, principal: Principal, run_id: UUID | str, suspension_id: UUID | str) -> ClosureReceipt:
    """The closure receipt of one pause, visible in the principal's scope (404 otherwise). Takes no lock."""
    with transaction.atomic():
        _bound_time()
        receipt = selectors.closures(principal).filter(run_id=run_id, suspension_id=suspension_id).first()
    if receipt is None:
        raise NotFound(f"no closure of pause {suspension_id} on run {run_id}")
    return receipt
