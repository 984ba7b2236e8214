"""Correlation-keyed waits (docs/api.md, "7.7 Flow waits (correlation-keyed)"): park a flow's wait, resume it by its
correlation id.

A park is T1 register + T2 suspend (runs.py's own functions) in one transaction,
plus the FlowWait row that finds the run again from the store key. A resume
is a T4 admission through claiming.claim, digests and bound, with source
`dispatch`.

Decisions:
- The flow snapshot travels inside a minimal valid continuation, under
  `provenance.flow_snapshot` (messages [], system_prompt "", step_index 0,
  tokens_used 0, new_messages_from 0, session_id = the store key, config {}).
  So the pause validates like any other, the suspension digest covers the
  snapshot, the sweeper and the console need nothing new, and the fresh start
  hands the snapshot back unchanged in `suspension.continuation.provenance`.
- `POST /dispatch/resume` is the bus's door for flow waits of every reason:
  it skips the reason matrix of docs/api.md, "3. Who may do what" (and the agent reply's reply_with),
  because the nonce and the decision token are the gate. The other doors
  refuse flow waits (claiming.check_reason), or the gate could be walked round.
- Every park mints a nonce, so a correlation id without one is `wrong_gate`.
  A correlation id naming another flow than the parked one is `wrong_gate`
  too: the nonce matched, but the id was not the one handed out.
- An approval-reason park needs a decision token (400 without one): the bus
  carries every correlation id, so without a secret only the approver's side
  holds, the bus alone could approve. Such a wait is decided through the
  dispatch door with the token, never in the console's inbox.
- A park is refused (400) unless its correlation id gives back its own key:
  a wait nobody can re-derive would only ever expire.
"""

import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.db import IntegrityError, transaction

from .. import correlation, digests, keys, scopes
from ..correlation import Correlation
from ..exceptions import AlreadySuspended, BadToken, InvalidRequest, NotFound, WrongGate
from ..models import AdmissionSource, ApprovalStatus, FlowWait, Reason, Role, RunState, Suspension
from ..observability import metrics
from ..principals import Principal
from .claiming import AdmissionDoor, through
from .claims import Claimed, Locked, Version, bounded_input, check_deadline, require, resolve_approval, write_events
from .runs import register_run, suspend_run

MAX_CORRELATION_BYTES = 1024


@dataclass(frozen=True)
class Envelope:
    """The inbound envelope of the flow step that pauses (the parts that key and route its wait)."""

    tenant: str
    env: str
    provider: str
    channel: str
    conversation: str
    user: str
    pack: str
    flow: str
    session_hint: str | None = None
    thread: str | None = None
    reply_to: str | None = None

    def correlation(self, nonce: str) -> Correlation:
        canonical = correlation.canonical_hint(
            tenant=self.tenant,
            provider=self.provider,
            channel=self.channel,
            conversation=self.conversation,
            user=self.user,
        )
        hint = correlation.bare_hint(canonical=canonical, session_hint=self.session_hint)
        return Correlation(hint, self.pack, self.flow, self.thread or None, self.reply_to or None, nonce)

    def store_key(self, hint: str) -> str:
        """The key as the flow store derives it from the envelope itself."""
        scope_hash = correlation.scope_hash(conversation=self.conversation, thread=self.thread, reply_to=self.reply_to)
        return correlation.store_key(
            store_hint=correlation.store_hint(hint=hint, pack=self.pack), scope_hash=scope_hash
        )


@dataclass(frozen=True)
class ParkedWait:
    wait: FlowWait
    suspension: Suspension
    user_id: str


def _scope(tenant: str, env: str) -> str:
    bad = {name: ["Not a valid scope segment."] for name, v in (("tenant", tenant), ("env", env)) if not _segment(v)}
    if bad:
        raise InvalidRequest("tenant and env must be scope segments", errors=bad)
    return f"{tenant}/{env}"


def _segment(value: str) -> bool:
    return scopes.SEGMENT.fullmatch(value) is not None


def _resumable_key(envelope: Envelope, parked: Correlation) -> str:
    """The store key, once the correlation id is known to give it (and the envelope) back."""
    text = correlation.build(parked)
    if len(text.encode("utf-8")) > MAX_CORRELATION_BYTES:
        raise InvalidRequest(f"the correlation id would be over {MAX_CORRELATION_BYTES} bytes")
    key = envelope.store_key(parked.hint)
    back = correlation.parse(text)
    if back != parked or back.store_key != key:
        raise InvalidRequest(
            "this envelope cannot be found again from its correlation id: a value holds a marker such as "
            "'::flow=', or the session hint does not carry the conversation as its fourth ':'-segment"
        )
    return key


def _continuation(key: str, snapshot: dict[str, Any]) -> dict[str, Any]:
    return {
        "messages": [],
        "system_prompt": "",
        "step_index": 0,
        "tokens_used": 0,
        "new_messages_from": 0,
        "session_id": key,
        "config": {},
        "provenance": {"flow_snapshot": snapshot},
    }


def _pending(envelope: Envelope, reason: str, key: str) -> list[dict[str, Any]]:
    call = {"id": "dispatch", "name": "dispatch", "arguments": digests.canonical(asdict(envelope)).decode("utf-8")}
    if reason == Reason.AGENT_REPLY:
        call["reply_with"] = key
    return [call]


def _retire_stale(scope: str, key: str) -> None:
    """Refuse a park while the key's wait is live; free the key of a wait whose pause is gone."""
    live = FlowWait.objects.select_for_update().filter(scope=scope, store_key=key, live=True).first()
    if live is None:
        return
    if Suspension.objects.filter(pk=live.suspension_id, run__state=RunState.PAUSED).exists():
        raise AlreadySuspended(f"a wait is already parked under this key (run {live.run_id})")
    # Cancelled or expired through the run's own doors, which know nothing of flow waits.
    FlowWait.objects.filter(pk=live.pk).update(live=False)


def park_flow_wait(
    *,
    principal: Principal,
    envelope: Envelope,
    snapshot: dict[str, Any],
    reason: str,
    ttl_seconds: int | None = None,
    decision_token: str | None = None,
    tags: Sequence[str] = (),
) -> ParkedWait:
    """T1 + T2 for a flow wait: a new run paused under the envelope's store key, in one transaction.

    Locks the key's live wait, if any (a second park while it is live is
    already_suspended), then writes through register_run and suspend_run.
    No replay: every park mints a fresh nonce.
    """
    scope = _scope(envelope.tenant, envelope.env)
    require(principal, Role.ENGINE, scope)
    if reason == Reason.APPROVAL and not decision_token:
        # The bus holds every correlation id it carries: without a token only the
        # approver's side knows, the bus alone could approve (docs/decisions.md, "Trust boundaries").
        raise InvalidRequest(
            "an approval wait needs a decision token",
            errors={"decision_token": ["Required when reason is approval."]},
        )
    nonce = secrets.token_hex(16)
    parked = envelope.correlation(nonce)
    key = _resumable_key(envelope, parked)
    with transaction.atomic():
        _retire_stale(scope, key)
        run = register_run(
            principal=principal,
            agent_id=f"{envelope.pack}/{envelope.flow}",
            scope=scope,
            session_id=parked.user_id,
            tags=tags,
        )
        suspension = suspend_run(
            principal=principal,
            run_id=run.id,
            revision=run.revision,
            reason=reason,
            pending=_pending(envelope, reason, key),
            continuation=_continuation(key, snapshot),
            ttl_seconds=ttl_seconds,
            correlation_id=correlation.build(parked),
        )
        wait = _write_wait(suspension, envelope, nonce, key, decision_token)
    return ParkedWait(wait=wait, suspension=suspension, user_id=parked.user_id)


def _write_wait(suspension: Suspension, envelope: Envelope, nonce: str, key: str, token: str | None) -> FlowWait:
    wait = FlowWait(
        store_key=key,
        correlation_id=suspension.correlation_id,
        nonce=nonce,
        pack=envelope.pack,
        flow=envelope.flow,
        decision_token_hash=keys.decision_token_hash(token) if token else "",
        run_id=suspension.run.id,
        suspension_id=suspension.id,
        run_revision=suspension.run.revision,
        created_at=suspension.created_at,
    )
    wait.stamp_scope(suspension.scope)
    try:
        with transaction.atomic():
            wait.save(force_insert=True)
    except IntegrityError:
        # A racing park of the same key committed first (one_live_wait_per_key).
        raise AlreadySuspended("a wait is already parked under this key") from None
    return wait


def _gate(scope: str, parsed: Correlation, token: str | None) -> FlowWait:
    """The parked wait this correlation id opens: 404 none, 409 wrong_gate, 403 bad_token. Reads only."""
    waits = FlowWait.objects.filter(scope=scope, store_key=parsed.store_key)
    wait = waits.filter(nonce=parsed.nonce).first() if parsed.nonce else None
    if wait is None:
        if not waits.exists():
            raise NotFound("no wait is parked under this correlation id")
        raise WrongGate("the correlation id does not carry the parked wait's nonce")
    if wait.flow != parsed.flow:
        raise WrongGate("the correlation id names another flow than the parked wait's")
    # The token is compared as hashes in constant time and never echoed.
    if wait.decision_token_hash and not keys.decision_token_matches(token or "", wait.decision_token_hash):
        raise BadToken()
    return wait


@metrics.counted_claim("dispatch")
def resume_flow_wait(
    *,
    principal: Principal,
    tenant: str,
    env: str,
    correlation_id: str,
    output: Any,
    decision_token: str | None = None,
) -> Claimed:
    """T4 by correlation id (bus): gates the wait (nonce, decision token), then claims it like any admission.

    Locks the run. The admitted input is the canonical JSON of `output`. The
    identical resume again answers the original receipt (fresh=False); a
    different output is admission_conflict; once the pause is gone with
    nothing to replay it is not_suspended. Never a second fresh claim.
    """
    scope = _scope(tenant, env)
    parsed = correlation.parse(correlation_id)
    if not parsed.resumable:
        raise InvalidRequest(
            "the correlation id carries no pack and flow", errors={"correlation_id": ["Not resumable."]}
        )
    if not principal.sees(scope):
        raise NotFound()
    require(principal, Role.BUS, scope)
    input_text = bounded_input(output)
    wait = _gate(scope, parsed, decision_token)
    version = Version(run_id=wait.run_id, suspension_id=wait.suspension_id, run_revision=wait.run_revision)
    door = Dispatch(version=version, input_text=input_text, wait=wait)
    return through(door, principal=principal, run_id=wait.run_id)


@dataclass(frozen=True)
class Dispatch(AdmissionDoor[Suspension]):
    """T4 through the dispatch door: its gate (nonce, decision token) was checked before, not the reason matrix."""

    wait: FlowWait
    role = Role.BUS
    door = None

    def check(self, t: Locked, live: Suspension) -> Suspension:
        check_deadline(live, t.now)
        return live

    def write(self, t: Locked, live: Suspension) -> Claimed:
        admission, admitted = self.admit(t, live, AdmissionSource.DISPATCH)
        # An approval-reason wait is answered here, not in the inbox: close its request.
        resolve_approval(t, live, ApprovalStatus.APPROVED, "answered by dispatch")
        t.writes.update(FlowWait, {"id": self.wait.pk}, live=False)
        # An approval-reason wait answered here is announced as decided too (docs/api.md, "3. Who may do what").
        write_events(t.writes, admitted, announce={"reason": live.reason})
        return Claimed(run=t.run, admission=admission)
