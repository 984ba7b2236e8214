"""Escalation chains through the real sweep (docs/policies.md, "Escalation chains"): each step runs once, in order,
before the deadline, with an `escalated` event carrying its index; its notifications ask whom the step names, once."""

import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection

from suspensions import services
from suspensions.models import Approval, Event, Notification, NotificationRoute, OutboxEvent, Run
from suspensions.principals import Principal
from suspensions.services import escalations, outbox
from tests.helpers import call, continuation, member

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("chains_intact")]
SCOPE = "acme/support"
ENGINE = Principal(name="token:engine", grants=((SCOPE, frozenset({"engine"})),))


def paused(chain, ttl=3600, scope=SCOPE, **policy):
    engine = Principal(name="token:engine", grants=((scope, frozenset({"engine"})),))
    run = services.register_run(principal=engine, agent_id="refund-agent", scope=scope)
    return services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=run.revision,
        reason="approval",
        pending=[call("c1", "send_refund")],
        continuation=continuation(),
        ttl_seconds=ttl,
        approval={"escalation": chain, **policy},
    )


def at(s, seconds):
    return s.created_at + timedelta(seconds=seconds)


def steps_of(s):
    return list(
        Event.objects.filter(run_id=s.run_id, kind="escalated").order_by("id").values_list("data__step", "revision")
    )


def approver(name, scope=SCOPE, groups=()):
    user = member(name, {scope: ["approver"]}, is_staff=True, email=f"{name}@example.com")
    for g in groups:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return user


CHAIN = [
    {"after_seconds": 60, "notify": {"people": ["ann"]}},
    {"after_seconds": 120, "notify": {"groups": ["leads"]}},
    {"after_seconds": 180, "notify": {"scopes": ["acme"]}},
]


def test_each_step_runs_once_in_order_at_its_time_without_a_revision_change(db):
    s = paused(CHAIN)
    assert services.expire_suspensions(now=at(s, 59)).escalation_steps == 0
    assert services.expire_suspensions(now=at(s, 60)).escalation_steps == 1
    assert services.expire_suspensions(now=at(s, 61)).escalation_steps == 0  # the same step never runs twice
    assert steps_of(s) == [(0, 2)]
    assert services.expire_suspensions(now=at(s, 185)).escalation_steps == 2  # overdue steps, one by one, in order
    assert steps_of(s) == [(0, 2), (1, 2), (2, 2)]
    record = Approval.objects.get(pk=s.id)
    assert (record.escalation_step, record.next_escalation_at, record.status) == (3, None, "pending")
    assert Run.objects.get(pk=s.run_id).revision == 2
    data = Event.objects.filter(run_id=s.run_id, kind="escalated").order_by("id").last().data
    assert data == {
        "suspension_id": str(s.id),
        "step": 2,
        "after_seconds": 180,
        "notify": {"scopes": ["acme"], "groups": [], "people": []},
    }
    announced = OutboxEvent.objects.filter(run_id=s.run_id, type="approval.escalated").order_by("id")
    assert [(a.data["step"], a.data["state"]) for a in announced] == [(0, "paused"), (1, "paused"), (2, "paused")]
    # Then the deadline: on_expiry applies as before.
    assert services.expire_suspensions(now=at(s, 3601)).expired == 1


def test_a_step_past_the_deadline_or_of_a_decided_approval_never_runs(db):
    late = paused([{"after_seconds": 60, "notify": {"people": ["ann"]}}], ttl=120)
    services.expire_suspensions(now=at(late, 500))  # the sweep was down past the deadline: it expires, unasked
    assert steps_of(late) == [] and Run.objects.get(pk=late.run_id).state == "expired"
    decided = paused(CHAIN)
    ann = Principal(name="token:ann", grants=((SCOPE, frozenset({"approver"})),))
    version = services.Version(run_id=decided.run_id, suspension_id=decided.id, run_revision=2)
    services.decide(principal=ann, suspension_id=decided.id, version=version, decision="deny", reason="no")
    assert services.expire_suspensions(now=at(decided, 200)).escalation_steps == 0
    assert steps_of(decided) == []


def test_each_step_asks_the_approvers_it_names_once_and_nobody_outside_who_may_decide(db):
    approver("ann")
    approver("bob", groups=["leads"])
    approver("cid", scope="acme")  # an approver of the parent scope: step 3's
    member("eve", {"globex": ["approver"]}, is_staff=True, email="eve@example.com").groups.add(
        Group.objects.get_or_create(name="leads")[0]
    )  # in the group, but may not decide here: never told
    route = NotificationRoute(kind="email", target="oncall@example.com", created_at=services.db_now())
    route.stamp_scope("acme")
    route.save()
    s = paused(CHAIN)
    notified, asked = [], {}
    for seconds in (60, 120, 180):
        services.expire_suspensions(now=at(s, seconds))
        outbox.fan_out()
        rows = Notification.objects.filter(approval_id=s.id, kind="escalation").exclude(pk__in=notified)
        notified += [n.pk for n in rows]
        asked[seconds] = sorted((n.step, n.recipient) for n in rows)
    assert asked == {
        60: [(1, "ann@example.com")],
        120: [(2, "bob@example.com")],
        # The approvers of `acme` itself (not those of acme/support only), and the routes of acme.
        180: [(3, "cid@example.com"), (3, "oncall@example.com")],
    }
    outbox.fan_out()  # a second fan-out asks nobody again
    assert Notification.objects.filter(approval_id=s.id, kind="escalation").count() == 4


def test_two_sweeps_at_once_run_each_step_once(transactional_db):
    chains = [paused(CHAIN) for _ in range(6)]
    moment = at(chains[-1], 200)
    barrier = threading.Barrier(4)

    def sweep():
        try:
            barrier.wait()
            for _ in range(3):
                escalations.run_due_steps(batch_size=2, now=moment)
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    escalations.run_due_steps(batch_size=50, now=moment)  # what a lock left is the next pass's
    for s in chains:
        assert steps_of(s) == [(0, 2), (1, 2), (2, 2)]
