"""A model-based test: hypothesis drives the real services with every transition, a plain model predicts each answer.

Rules: register, suspend (three reasons, with or without a deadline, stale
revisions too; approval pauses with a policy: quorum 1 or 2, on expiry
expire, deny or escalate), one-shot resume, approve (a vote: short of the
quorum, replayed, or admitting), deny, admit an agent reply (right or wrong
reply_with), start, cancel, complete, fail, replay of an earlier claim
(identical and changed), clock advance (deadlines moved back, as if time
passed) with the sweep, and the operator's closure of a started run.

After every step: the touched run's state and revision are the model's (only
legal transitions happened), at most one claim won per pause, every receipt
ever handed out is unchanged, the revision only grows, and the events are
one per transition, in order, with the run's revision at that transition.
"""

import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from suspensions import services
from suspensions.exceptions import ServiceError
from suspensions.models import Admission, ApprovalVote, ClosureReceipt, Event, Run, Start
from suspensions.principals import Principal
from suspensions.wire.answers import AdmissionReceiptOut, ClosureReceiptOut, StartReceiptOut
from tests.helpers import call, continuation

SCOPE = "sm"
# (rule, predicted outcome) -> calls, printed at the end: docs/reliability.md quotes it.
TALLY: Counter = Counter()
TTL = 100  # seconds; the clock moves in steps of 50, so no deadline is ever within reach of real time
ESCALATE_BY = 100  # an escalation's move of the deadline, in model seconds
POLICIES = st.sampled_from([(1, "expire"), (2, "expire"), (2, "expire"), (1, "deny"), (2, "escalate"), (1, "escalate")])
# Most claims address the live pause with the reason the path answers; the rest probe the refusals.
OLDER = st.sampled_from([False, False, False, True])
FITS = st.sampled_from([True, True, True, False])
REFUSED_BY_REASON = {
    ("approval", "one_shot"): "requires_approval",
    ("agent_reply", "one_shot"): "agent_reply_only",
    ("external_tool", "decide"): "not_an_approval",
    ("agent_reply", "decide"): "not_an_approval",
    ("external_tool", "admit"): "not_an_agent_reply",
    ("approval", "admit"): "not_an_agent_reply",
}


def who(name: str, *roles: str) -> Principal:
    return Principal(name=name, grants=((SCOPE, frozenset(roles)),))


ENGINE = who("token:engine", "engine")
BUS = who("token:bus", "bus")
APPROVERS = (who("token:ann", "approver"), who("token:bob", "approver"))
OPERATOR = who("token:ops", "operator")


@dataclass
class Pause:
    id: Any
    reason: str
    revision: int  # the run revision the pause created: what a resumer saw
    expires_in: int | None  # seconds left on the model clock; None = no deadline
    quorum: int = 1
    on_expiry: str = "expire"  # expire, deny, or escalate (by ESCALATE_BY, once)
    escalated: bool = False
    voters: list[str] = field(default_factory=list)


@dataclass
class Claim:
    """One admission as the model knows it, with the receipts it was first answered with."""

    pause: Pause
    identity: tuple
    claimed_revision: int
    state: str
    receipt: dict[str, Any]
    start: dict[str, Any] | None = None


@dataclass
class Model:
    id: Any
    state: str = "running"
    revision: int = 1
    live: Pause | None = None
    pauses: list[Pause] = field(default_factory=list)
    claims: dict[Any, Claim] = field(default_factory=dict)
    denials: dict[Any, tuple[str, str]] = field(default_factory=dict)
    closures: dict[Any, tuple[Any, dict[str, Any]]] = field(default_factory=dict)
    events: list[tuple[str, int]] = field(default_factory=list)
    # The unclaimed pause the sweep ended the run on, and the revision of its `expired` event.
    swept: tuple[Any, int] | None = None

    def expired(self, pause: Pause) -> bool:
        return pause.expires_in is not None and pause.expires_in <= 0


def stable(receipt: dict[str, Any]) -> dict[str, Any]:
    """A receipt without what is allowed to change: the admission's progress and the response's freshness."""
    return {k: v for k, v in receipt.items() if k not in ("state", "fresh")}


class ServiceMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Model] = []
        self.touched: Model | None = None
        self.wins: dict[Any, int] = {}
        # Each example starts from an empty database: its rows are rolled back in teardown().
        self.example = transaction.atomic()
        self.example.__enter__()

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self.example.__exit__(None, None, None)

    # -- helpers --------------------------------------------------------------------

    def attempt(self, fn: Any, expected: str | None) -> Any:
        """Call the service; `expected` is None for success or the error code the model predicts."""
        TALLY[(sys._getframe(1).f_code.co_name, expected or "ok")] += 1  # the calling rule, for the report
        try:
            result = fn()
        except ServiceError as exc:
            assert exc.code == expected, f"got {exc.code} ({exc.detail}), model expected {expected or 'success'}"
            return None
        assert expected is None, f"succeeded, model expected {expected}"
        return result

    def pick(self, i: int, prefer: Any = None) -> Model:
        """Run number i among those `prefer` accepts (all runs when none does): most steps should matter."""
        candidates = [r for r in self.runs if prefer is None or prefer(r)] or self.runs
        run = candidates[i % len(candidates)]
        self.touched = run
        return run

    def move(self, run: Model, state: str, kind: str) -> None:
        run.state = state
        run.revision += 1
        run.events.append((kind, run.revision))

    def claim_refusal(self, run: Model, pause: Pause, identity: tuple, path: str) -> str | None:
        """The code a claim gets (None: it wins, "replay": the original receipt comes back)."""
        if run.live is not None and run.live.id == pause.id:
            refusal = REFUSED_BY_REASON.get((pause.reason, path))
            if refusal:
                return refusal
        current = run.state == "paused" and run.live is pause and run.revision == identity[1]
        if current:
            return "suspension_expired" if run.expired(pause) else None
        existing = run.claims.get(pause.id)
        if existing is not None:
            if existing.identity == identity:
                return "replay"
            return "admission_conflict" if run.revision == existing.claimed_revision else "version_conflict"
        if self.swept(run, pause, identity[1]):
            return "suspension_expired"
        return "version_conflict" if run.state == "paused" else "not_suspended"

    def version(self, run: Model, pause: Pause, stale: bool) -> services.Version:
        return services.Version(run_id=run.id, suspension_id=pause.id, run_revision=pause.revision - int(stale))

    def swept(self, run: Model, pause: Pause, revision: int) -> bool:
        """The sweep ended the run on `pause` held at `revision`: a late claim is 410, as before the sweep."""
        return run.swept == (pause.id, revision + 1) and run.state in ("expired", "failed")

    def won(self, run: Model, pause: Pause, identity: tuple, claimed: Any, state: str) -> None:
        self.wins[pause.id] = self.wins.get(pause.id, 0) + 1
        run.revision += 1
        run.state = "running"
        run.events.append(("admitted", run.revision))
        receipt = AdmissionReceiptOut.of(claimed.admission, fresh=True).wire()
        run.claims[pause.id] = Claim(pause, identity, run.revision, state, receipt)
        assert claimed.fresh and claimed.admission.claimed_revision == run.revision

    def replayed(self, run: Model, pause: Pause, claimed: Any) -> None:
        assert claimed.fresh is False
        assert stable(AdmissionReceiptOut.of(claimed.admission, fresh=False).wire()) == stable(
            run.claims[pause.id].receipt
        )

    # -- rules --------------------------------------------------------------------------

    @initialize()
    def first_run(self) -> None:
        self.register()

    @rule()
    def register(self) -> None:
        run = services.register_run(principal=ENGINE, agent_id="sm-agent", scope=SCOPE)
        model = Model(id=run.id, events=[("registered", 1)])
        self.runs.append(model)
        self.touched = model

    @rule(
        i=st.integers(0, 50),
        reason=st.sampled_from(["external_tool", "approval", "agent_reply"]),
        deadline=st.sampled_from([True, True, False]),
        stale=st.sampled_from([False, False, False, True]),
        policy=POLICIES,
    )
    def suspend(self, i: int, reason: str, deadline: bool, stale: bool, policy: tuple[int, str]) -> None:
        run = self.pick(i, lambda r: r.state == "running" and r.live is None)
        revision = run.revision - 1 if stale else run.revision
        if revision != run.revision:
            expected = "version_conflict"
        elif run.state == "paused" or run.live is not None:
            expected = "already_suspended"
        elif run.state != "running":
            expected = "invalid_state"
        else:
            expected = None
        pending = [call(**({"reply_with": "q-1"} if reason == "agent_reply" else {}))]
        quorum, on_expiry = policy if reason == "approval" else (1, "expire")
        on_expiry = on_expiry if deadline else "expire"  # without a deadline nothing expires
        rule: dict[str, Any] = {"quorum": quorum, "exclude_requester": False, "on_expiry": on_expiry}
        if on_expiry == "escalate":
            rule["on_expiry"] = {"escalate": {"extend_seconds": ESCALATE_BY}}
        suspension = self.attempt(
            lambda: services.suspend_run(
                principal=ENGINE,
                run_id=run.id,
                revision=revision,
                reason=reason,
                pending=pending,
                continuation=continuation(),
                ttl_seconds=TTL if deadline else 0,
                approval=rule if reason == "approval" else None,
            ),
            expected,
        )
        if suspension is not None:
            for claim in run.claims.values():
                if claim.state == "started":
                    claim.state = "done"
            self.move(run, "paused", "suspended")
            run.live = Pause(suspension.id, reason, run.revision, TTL if deadline else None, quorum, on_expiry)
            run.pauses.append(run.live)

    def target(self, run: Model, older: bool) -> Pause | None:
        if not run.pauses:
            return None
        return run.pauses[0] if older else run.pauses[-1]

    @precondition(lambda self: any(r.pauses for r in self.runs))
    @rule(
        i=st.integers(0, 50),
        older=OLDER,
        stale=st.sampled_from([False, False, False, True]),
        content=st.sampled_from(["a", "b"]),
        fits=FITS,
    )
    def resume(self, i: int, older: bool, stale: bool, content: str, fits: bool) -> None:
        run = self.pick(i, lambda r: r.live is not None and (r.live.reason == "external_tool") == fits)
        pause = self.target(run, older)
        if pause is None:
            return
        version = self.version(run, pause, stale)
        identity = ("one_shot", version.run_revision, content)
        expected = self.claim_refusal(run, pause, identity, "one_shot")
        results = [{"call_id": "c1", "content": content}]
        claimed = self.attempt(
            lambda: services.resume_run(principal=ENGINE, run_id=run.id, version=version, results=results),
            None if expected == "replay" else expected,
        )
        if claimed is None:
            return
        if expected == "replay":
            self.replayed(run, pause, claimed)
            assert claimed.suspension is None or claimed.fresh is False
            return
        self.won(run, pause, identity, claimed, "started")
        run.events.append(("started", run.revision))
        run.claims[pause.id].start = StartReceiptOut.of(claimed.start).wire()
        run.live = None
        assert claimed.suspension is not None and claimed.results is not None

    @precondition(lambda self: any(r.pauses for r in self.runs))
    @rule(
        i=st.integers(0, 50),
        older=OLDER,
        stale=st.sampled_from([False, False, False, True]),
        approver=st.sampled_from([0, 1]),
        fits=FITS,
    )
    def approve(self, i: int, older: bool, stale: bool, approver: int, fits: bool) -> None:
        run = self.pick(i, lambda r: r.live is not None and (r.live.reason == "approval") == fits)
        pause = self.target(run, older)
        if pause is None:
            return
        version = self.version(run, pause, stale)
        name = APPROVERS[approver].name
        identity = ("approve", version.run_revision, name)
        expected = self.claim_refusal(run, pause, identity, "decide")
        if expected is None and name in pause.voters:
            expected = "vote_replay"  # open, and this approver already voted: the same vote again
        elif expected == "admission_conflict" and name in pause.voters:
            expected = "replay"  # decided, and this approver's vote was among those that decided it
        answer = self.attempt(
            lambda: services.approve(principal=APPROVERS[approver], suspension_id=pause.id, version=version, note=""),
            None if expected in ("replay", "vote_replay") else expected,
        )
        if answer is None:
            return
        if expected == "replay":
            self.replayed(run, pause, answer)
            return
        if expected == "vote_replay":
            TALLY[("approve", "vote replayed")] += 1
            assert isinstance(answer, services.Voted) and answer.fresh is False
            assert answer.voters == pause.voters
            return
        pause.voters.append(name)
        if pause.quorum > 1:
            run.events.append(("voted", run.revision))
        if len(pause.voters) < pause.quorum:
            TALLY[("approve", "vote short of quorum")] += 1
            assert isinstance(answer, services.Voted) and answer.fresh
            assert (answer.votes, answer.quorum, answer.run.revision) == (len(pause.voters), pause.quorum, run.revision)
            return
        self.won(run, pause, identity, answer, "admitted")

    @precondition(lambda self: any(r.live is not None and r.live.reason == "approval" for r in self.runs))
    @rule(i=st.integers(0, 50), approver=st.sampled_from([0, 1]))
    def vote(self, i: int, approver: int) -> None:
        """An approver votes on a live approval with the version it shows: quorum policies get exercised."""
        self.approve(i=i, older=False, stale=False, approver=approver, fits=True)

    @precondition(lambda self: any(r.pauses for r in self.runs))
    @rule(i=st.integers(0, 50), older=OLDER, approver=st.sampled_from([0, 1]), note=st.sampled_from(["no", "nope"]))
    def deny(self, i: int, older: bool, approver: int, note: str) -> None:
        run = self.pick(i, lambda r: r.pauses and r.pauses[-1].reason == "approval")
        pause = self.target(run, older)
        if pause is None:
            return
        version = self.version(run, pause, False)
        name = APPROVERS[approver].name
        expected = None
        if run.live is not None and run.live.id == pause.id:
            expected = REFUSED_BY_REASON.get((pause.reason, "decide"))
        current = run.state == "paused" and run.live is pause and run.revision == pause.revision
        if expected is None and not current:
            if run.denials.get(pause.id) == (name, note):
                expected = "replay"
            elif pause.id in run.claims:
                expected = "not_suspended"
            elif self.swept(run, pause, version.run_revision):
                expected = "suspension_expired"
            else:
                expected = "version_conflict" if run.state == "paused" else "not_suspended"
        elif expected is None and run.expired(pause):
            expected = "suspension_expired"
        denied = self.attempt(
            lambda: services.deny_approval(
                principal=APPROVERS[approver], suspension_id=pause.id, version=version, reason=note
            ),
            None if expected == "replay" else expected,
        )
        if denied is None:
            return
        if expected == "replay":
            assert denied.fresh is False
            return
        assert denied.fresh
        run.denials[pause.id] = (name, note)
        run.live = None
        self.move(run, "failed", "denied")

    @precondition(lambda self: any(r.pauses for r in self.runs))
    @rule(
        i=st.integers(0, 50),
        older=OLDER,
        reply=st.sampled_from(["q-1", "q-1", "q-1", "q-2"]),
        text=st.sampled_from(['"yes"', '{"answer": 42}']),
        fits=FITS,
    )
    def admit(self, i: int, older: bool, reply: str, text: str, fits: bool) -> None:
        run = self.pick(i, lambda r: r.live is not None and (r.live.reason == "agent_reply") == fits)
        pause = self.target(run, older)
        if pause is None:
            return
        version = self.version(run, pause, False)
        identity = ("admit", version.run_revision, text)
        expected = self.claim_refusal(run, pause, identity, "admit")
        if expected is None and reply != "q-1":
            expected = "reply_mismatch"
        claimed = self.attempt(
            lambda: services.admit_reply(principal=BUS, run_id=run.id, version=version, input=text, reply_with=reply),
            None if expected == "replay" else expected,
        )
        if claimed is None:
            return
        if expected == "replay":
            self.replayed(run, pause, claimed)
            return
        self.won(run, pause, identity, claimed, "admitted")

    @precondition(lambda self: any(r.claims for r in self.runs))
    @rule(i=st.integers(0, 50))
    def start(self, i: int) -> None:
        run = self.pick(i, lambda r: any(c.state == "admitted" for c in r.claims.values()))
        if not run.claims:
            return
        claim = list(run.claims.values())[-1]
        admission_id = claim.receipt["id"]
        if claim.start is not None:
            expected = "resume_already_started"
        elif claim.state == "expired":
            expected = "suspension_expired"
        elif claim.state != "admitted" or run.live is not claim.pause:
            expected = "invalid_state"
        elif run.expired(claim.pause):
            expected = "suspension_expired"
        else:
            expected = None
        started = self.attempt(lambda: services.start_admission(principal=ENGINE, admission_id=admission_id), expected)
        if started is None:
            return
        assert started.suspension is not None
        claim.state = "started"
        claim.start = StartReceiptOut.of(started.start).wire()
        run.live = None
        run.events.append(("started", run.revision))

    @rule(
        i=st.integers(0, 50),
        how=st.sampled_from(["cancel", "complete", "fail"]),
        stale=st.sampled_from([False, False, False, True]),
        live=FITS,
    )
    def finish(self, i: int, how: str, stale: bool, live: bool) -> None:
        run = self.pick(i, lambda r: (r.state in ("running", "paused")) == live)
        revision = run.revision - 1 if stale else run.revision
        allowed = {"running", "paused"} if how == "cancel" else {"running"}
        swept_at = run.swept[1] if run.swept is not None and run.state in ("expired", "failed") else None
        if how == "cancel" and swept_at == revision + 1:
            expected = "suspension_expired"  # the pause it was paused on expired: 410, swept or not
        elif revision != run.revision:
            expected = "version_conflict"
        elif run.state not in allowed:
            expected = "invalid_state"
        elif run.live is not None and run.state == "paused" and run.expired(run.live):
            expected = "suspension_expired"
        else:
            expected = None
        calls = {
            "cancel": lambda: services.cancel_run(principal=ENGINE, run_id=run.id, revision=revision),
            "complete": lambda: services.complete_run(principal=ENGINE, run_id=run.id, revision=revision),
            "fail": lambda: services.fail_run(principal=ENGINE, run_id=run.id, revision=revision, error="boom"),
        }
        if self.attempt(calls[how], expected) is None:
            return
        for claim in run.claims.values():
            if claim.state in ("admitted", "started"):
                claim.state = "cancelled" if how == "cancel" else "done"
        run.live = None
        self.move(
            run,
            {"cancel": "cancelled", "complete": "completed", "fail": "failed"}[how],
            how + ("led" if how == "cancel" else "d" if how == "complete" else "ed"),
        )

    @precondition(lambda self: any(p.expires_in is not None for r in self.runs for p in r.pauses))
    @rule(seconds=st.sampled_from([50, 100]))
    def clock_advance(self, seconds: int) -> None:
        """Time passes for every deadline (each moved back by `seconds`); nothing expires until the sweep."""
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE suspensions_suspension SET expires_at = expires_at - %s, deadline = deadline - %s"
                " WHERE expires_at IS NOT NULL AND scope = %s",
                [timedelta(seconds=seconds), timedelta(seconds=seconds), SCOPE],
            )
        for run in self.runs:
            for pause in run.pauses:
                if pause.expires_in is not None:
                    pause.expires_in -= seconds
        self.touched = None

    @rule()
    def sweep(self) -> None:
        """T9: every live pause past its deadline expires, paused or admitted and not started."""
        services.expire_suspensions()
        for run in self.runs:
            live = run.live
            if live is None or not run.expired(live):
                continue
            claim = run.claims.get(live.id)
            if run.state == "paused" and live.on_expiry == "escalate" and not live.escalated:
                TALLY[("sweep", "escalated")] += 1
                live.escalated = True
                live.expires_in = (live.expires_in or 0) + ESCALATE_BY
                run.events.append(("escalated", run.revision))
            elif run.state == "paused":
                TALLY[("sweep", "denied" if live.on_expiry == "deny" else "expired")] += 1
                self.move(run, "failed" if live.on_expiry == "deny" else "expired", "expired")
                run.swept = (live.id, run.revision)
                run.live = None
            elif run.state == "running" and claim is not None and claim.state == "admitted":
                claim.state = "expired"
                self.move(run, "expired", "expired")
                run.live = None
        self.touched = None

    @precondition(lambda self: any(c.start for r in self.runs for c in r.claims.values()))
    @rule(i=st.integers(0, 50), stale=st.sampled_from([False, False, False, True]), again=st.booleans())
    def close(self, i: int, stale: bool, again: bool) -> None:
        """The operator closes the latest started execution; `again` re-files the first closure's exact request."""
        run = self.pick(i, lambda r: any(c.start for c in r.claims.values()))
        claim = list(run.claims.values())[-1] if run.claims else None
        if claim is None or claim.start is None:
            return
        previous = run.closures.get(claim.pause.id)
        if previous is not None and again:
            request, expected = previous[0], "replay"
        else:
            request = self.closure_request(run, claim, stale)
            if previous is not None:
                expected = "closure_conflict"  # a new observed_at: a different request for a closed pause
            elif run.state != "running" or claim.state != "started":
                expected = "invalid_state"
            else:
                expected = "version_conflict" if stale else None
        closed = self.attempt(
            lambda: services.close_run(principal=OPERATOR, run_id=run.id, request=request),
            None if expected == "replay" else expected,
        )
        if closed is None:
            return
        if expected == "replay":
            assert closed.fresh is False
            assert ClosureReceiptOut.of(closed.receipt, fresh=True).wire() == previous[1]
            return
        claim.state = "closed"
        self.move(run, "incomplete", "closed")
        run.closures[claim.pause.id] = (request, ClosureReceiptOut.of(closed.receipt, fresh=True).wire())

    def closure_request(self, run: Model, claim: Claim, stale: bool) -> Any:
        now = services.db_now()
        return services.ClosureRequest(
            schema_version=1,
            version=services.Version(
                run_id=run.id, suspension_id=claim.pause.id, run_revision=claim.receipt["version"]["run_revision"]
            ),
            admission_digest=claim.receipt["request_digest"],
            start_digest=claim.start["digest"],
            run_revision=run.revision - int(stale),
            issuer="sm-monitor",
            issuer_revision="1",
            proof_ref="proof-1",
            proof_digest="0" * 64,
            observed_at=now - timedelta(seconds=1),
            expires_at=now + timedelta(hours=1),
        )

    @precondition(lambda self: any(run.claims for run in self.runs))
    @rule(i=st.integers(0, 50))
    def replay_first_claim(self, i: int) -> None:
        """The identical request of a run's first claim again: the original receipt, whatever happened since."""
        claimed_runs = [run for run in self.runs if run.claims]
        run = claimed_runs[i % len(claimed_runs)]
        self.touched = run
        claim = next(iter(run.claims.values()))
        kind, revision, detail = claim.identity
        version = services.Version(run_id=run.id, suspension_id=claim.pause.id, run_revision=revision)
        claimed = self.attempt(lambda: self.send_again(run, claim, kind, version, detail), None)
        self.replayed(run, claim.pause, claimed)

    def send_again(self, run: Model, claim: Claim, kind: str, version: services.Version, detail: str) -> Any:
        if kind == "one_shot":
            results = [{"call_id": "c1", "content": detail}]
            return services.resume_run(principal=ENGINE, run_id=run.id, version=version, results=results)
        if kind == "approve":
            approver = next(a for a in APPROVERS if a.name == detail)
            return services.approve(principal=approver, suspension_id=claim.pause.id, version=version)
        return services.admit_reply(principal=BUS, run_id=run.id, version=version, input=detail, reply_with="q-1")

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def the_touched_run_is_what_the_model_says(self) -> None:
        runs = self.runs if self.touched is None else [self.touched]
        for run in runs:
            row = Run.objects.get(pk=run.id)
            assert (row.state, row.revision) == (run.state, run.revision)
            events = list(Event.objects.filter(run_id=run.id).order_by("id").values_list("kind", "revision"))
            assert events == run.events
            for claim in run.claims.values():
                admission = Admission.objects.get(pk=claim.receipt["id"])
                assert stable(AdmissionReceiptOut.of(admission, fresh=False).wire()) == stable(claim.receipt)
                assert admission.state == claim.state
                if claim.start is not None:
                    start = Start.objects.get(admission_id=admission.id)
                    assert StartReceiptOut.of(start).wire() == claim.start
            for pause_id, (_, receipt) in run.closures.items():
                row = ClosureReceipt.objects.get(run_id=run.id, suspension_id=pause_id)
                assert ClosureReceiptOut.of(row, fresh=True).wire() == receipt

    @invariant()
    def at_most_one_claim_won_per_pause(self) -> None:
        assert all(n == 1 for n in self.wins.values())
        assert Admission.objects.filter(scope=SCOPE).count() == sum(len(r.claims) for r in self.runs)

    @invariant()
    def every_vote_is_recorded_once(self) -> None:
        votes = sorted(ApprovalVote.objects.filter(scope=SCOPE).values_list("suspension_id", "voter"))
        assert votes == sorted((p.id, v) for r in self.runs for p in r.pauses for v in p.voters)

    @invariant()
    def one_event_per_transition(self) -> None:
        assert Event.objects.filter(scope=SCOPE).count() == sum(len(r.events) for r in self.runs)


@pytest.mark.slow
@pytest.mark.django_db
def test_the_services_follow_the_model_under_random_sequences_of_every_transition():
    run_state_machine_as_test(
        ServiceMachine,
        settings=settings(
            max_examples=150,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        ),
    )
    outcomes = Counter(outcome for (_, outcome) in TALLY.elements())
    print(f"\nstate machine: {sum(TALLY.values())} service calls checked against the model; {dict(outcomes)}")
    print("by rule: " + ", ".join(f"{rule}/{outcome}: {n}" for (rule, outcome), n in sorted(TALLY.items())))
