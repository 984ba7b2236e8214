"""Agent-reply discovery (docs/api.md, "`GET /agent-replies/runs` — discovery"): runs the bus must answer or recover, in
its exact scope, by id."""

from datetime import timedelta

import pytest

from suspensions import selectors, services
from suspensions.models import AdmissionSource, Run, Suspension
from suspensions.principals import Principal
from tests.helpers import call, client, continuation, problem

URL = "/api/v1/agent-replies/runs"
SETUP = Principal(
    name="token:setup",
    grants=(("acme", frozenset({"engine", "bus", "approver"})), ("other", frozenset({"engine", "bus"}))),
)


@pytest.fixture
def bus(db, token):
    return client(token("acme", ["bus"], "bus"))


# -- runs in every shape, made through the services ------------------------------------------


def paused(reason="agent_reply", scope="acme", ttl=None):
    run = services.register_run(principal=SETUP, agent_id="agent", scope=scope)
    pending = [call(reply_with="q-1")] if reason == "agent_reply" else [call()]
    return services.suspend_run(
        principal=SETUP,
        run_id=run.id,
        revision=1,
        reason=reason,
        pending=pending,
        continuation=continuation(),
        ttl_seconds=ttl,
    )


def claim(s, source=AdmissionSource.AGENT_REPLY):
    v = services.Version(run_id=s.run_id, suspension_id=s.id, run_revision=2)
    if s.reason == "approval":
        return services.approve(principal=SETUP, suspension_id=s.id, version=v)
    return services.admit_reply(
        principal=SETUP, run_id=s.run_id, version=v, input='"yes"', reply_with="q-1", source=source
    )


def started(s, source=AdmissionSource.AGENT_REPLY):
    return services.start_admission(principal=SETUP, admission_id=claim(s, source).admission.id)


def rid(s):
    return str(s.run_id)


def expired(s):
    past = Run.objects.get(pk=s.run_id).updated_at - timedelta(seconds=1)
    Suspension.objects.filter(pk=s.id).update(expires_at=past, deadline=past)
    return s


def completed(s):
    services.complete_run(principal=SETUP, run_id=s.run_id, revision=started(s).run.revision)
    return s


def cancelled(s):
    services.cancel_run(principal=SETUP, run_id=s.run_id, revision=started(s).run.revision)
    return s


def one_shot(s):
    v = services.Version(run_id=s.run_id, suspension_id=s.id, run_revision=2)
    services.resume_run(principal=SETUP, run_id=s.run_id, version=v, results=[{"call_id": "c1", "content": 1}])
    return s


# Each builder makes one run in one shape and returns its id.
QUALIFYING = {
    "live reply pause": lambda: rid(paused()),
    "expired reply pause": lambda: rid(expired(paused(ttl=60))),
    "admitted reply": lambda: str(claim(paused()).run.id),
    "started reply": lambda: str(started(paused()).run.id),
    "started dispatch": lambda: str(started(paused(), AdmissionSource.DISPATCH).run.id),
}
NOT_QUALIFYING = {
    "external tool pause": lambda: rid(paused("external_tool")),
    "approval pause": lambda: rid(paused("approval")),
    "started approval": lambda: str(started(paused("approval")).run.id),
    "one-shot resume": lambda: rid(one_shot(paused("external_tool"))),
    "completed reply run": lambda: rid(completed(paused())),
    "cancelled reply run": lambda: rid(cancelled(paused())),
    "never paused": lambda: str(services.register_run(principal=SETUP, agent_id="agent", scope="acme").id),
    "reply pause in another scope": lambda: rid(paused(scope="other")),
    "reply pause in a sub-scope": lambda: rid(paused(scope="acme/support")),
}


def discover(c, **params):
    response = c.get(URL, params)
    assert response.status_code == 200, response.content
    return response.json()


# -- what qualifies -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", QUALIFYING, ids=list(QUALIFYING))
def test_a_run_waiting_for_or_running_an_agent_reply_is_discovered(bus, kind):
    run_id = QUALIFYING[kind]()
    assert discover(bus) == {"runs": [run_id], "next": None}


@pytest.mark.parametrize("kind", NOT_QUALIFYING, ids=list(NOT_QUALIFYING))
def test_other_runs_are_not_discovered(bus, kind):
    NOT_QUALIFYING[kind]()
    assert discover(bus) == {"runs": [], "next": None}


def test_a_bus_in_a_sub_scope_sees_only_that_scope(db, token):
    paused()
    below = NOT_QUALIFYING["reply pause in a sub-scope"]()
    assert discover(client(token("acme/support", ["bus"], "support-bus")))["runs"] == [below]


def test_the_list_is_one_query(db, django_assert_num_queries):
    for build in QUALIFYING.values():
        build()
    principal = Principal(name="token:bus", grants=(("acme", frozenset({"bus"})),))
    with django_assert_num_queries(1):
        assert len(list(selectors.agent_reply_runs(principal).values_list("id", flat=True)[:256])) == 5


# -- the cursor and the limit --------------------------------------------------------------------


def test_runs_come_by_id_after_the_cursor_exclusive(bus):
    ids = sorted(rid(paused()) for _ in range(5))
    assert discover(bus, limit=2) == {"runs": ids[:2], "next": ids[1]}
    assert discover(bus, limit=2, after=ids[1]) == {"runs": ids[2:4], "next": ids[3]}
    assert discover(bus, limit=2, after=ids[3]) == {"runs": ids[4:], "next": None}
    assert discover(bus, after=ids[4]) == {"runs": [], "next": None}


def test_a_full_last_page_says_there_is_no_next(bus):
    ids = sorted(rid(paused()) for _ in range(2))
    assert discover(bus, limit=2) == {"runs": ids, "next": None}


@pytest.mark.parametrize("limit", ["0", "257", "-1", "1000", "ten", "1.5"])
def test_a_limit_outside_1_to_256_is_refused_not_clamped(bus, limit):
    paused()
    body = problem(bus.get(URL, {"limit": limit}), 400, "invalid_request")
    assert "limit" in body["errors"]


@pytest.mark.parametrize("limit", ["1", "256"])
def test_the_limits_bounds_are_accepted(bus, limit):
    assert discover(bus, limit=limit) == {"runs": [], "next": None}


@pytest.mark.parametrize("after", ["nope", "123", "01a22a32-a8c0-7c91-af22"])
def test_a_malformed_cursor_is_refused(bus, after):
    body = problem(bus.get(URL, {"after": after}), 400, "invalid_request")
    assert "after" in body["errors"]


@pytest.mark.parametrize("roles", [["engine"], ["approver", "auditor", "operator"]])
def test_discovery_needs_the_bus_role(db, token, roles):
    paused()
    problem(client(token("acme", roles, "not-a-bus")).get(URL), 403, "forbidden")


def test_a_bus_in_another_scope_discovers_nothing_of_acme(db, token):
    paused()
    assert discover(client(token("elsewhere", ["bus"], "stranger"))) == {"runs": [], "next": None}


# -- paging a large scope -------------------------------------------------------------------------


@pytest.mark.slow
def test_paging_600_runs_by_256_lists_every_qualifying_run_exactly_once(bus):
    shapes = list(QUALIFYING.values()) + [NOT_QUALIFYING[k] for k in ["external tool pause", "completed reply run"]]
    ids = [shapes[n % len(shapes)]() for n in range(600)]
    expected = sorted(ids[n] for n in range(600) if n % len(shapes) < len(QUALIFYING))
    elsewhere = [NOT_QUALIFYING[k]() for k in ["reply pause in another scope", "reply pause in a sub-scope"] * 10]
    first = discover(bus, limit=256)
    second = discover(bus, limit=256, after=first["next"])
    assert (len(first["runs"]), first["next"], second["next"]) == (256, first["runs"][-1], None)
    assert first["runs"] + second["runs"] == expected
    assert not set(elsewhere) & set(first["runs"] + second["runs"])
