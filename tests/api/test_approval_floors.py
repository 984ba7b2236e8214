"""Approval floors (issue 32 item 5, docs/policies.md "Floors"): the operator routes, and what a floor does.

The requester used to choose how strict the approval of their own request
was: no policy (or `exclude_requester: false`) let an engine approve itself,
and an approver token of the same person that was not linked to them counted
as a second voter. A floor on the scope raises every pause to it.
"""

import uuid

import pytest

from suspensions import floors
from suspensions.exceptions import BelowApprovalFloor
from suspensions.models import ApprovalFloor, ApprovalVote, Event
from suspensions.tokens import create_token
from tests.helpers import call, client, continuation, member, post, problem, register, snapshot, version

FLOORS = "/api/v1/approval-floors"


@pytest.fixture
def operator(db, token):
    return client(token("acme", ["operator"], "ops"))


@pytest.fixture
def globex_operator(db, token):
    return client(token("globex", ["operator"], "globex-ops"))


def everything():
    """What a refusal must leave as it was: the run tables and every floor, field by field."""
    rows = ApprovalFloor.objects.order_by("scope").values_list(
        "scope", "quorum", "exclude_requester", "on_expiry", "require_linked_person", "updated_at"
    )
    return {**snapshot(), "floors": [tuple(r) for r in rows]}


def refused(send, status, code):
    before = everything()
    body = problem(send(), status, code)
    assert everything() == before
    return body


def created(c, **body):
    response = post(c, FLOORS, {"scope": "acme", **body})
    assert response.status_code == 201, response.content
    return response.json()


def patch(c, floor_id, body):
    return c.patch(f"{FLOORS}/{floor_id}", data=body, format="json")


def paused(c, scope=None, **approval_fields):
    """An approval pause by `c`; `approval` is sent only when fields are given."""
    run = register(c, scope)
    body = {"revision": run["revision"], "reason": "approval", "pending": [call()], "continuation": continuation()}
    if approval_fields:
        body["approval"] = approval_fields
    response = post(c, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def decide(c, s, decision="approve", **body):
    return post(c, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": decision, **body})


def approval_of(c, s):
    return c.get(f"/api/v1/approvals/{s['id']}").json()


def suspended_data(s):
    return Event.objects.get(run_id=s["run_id"], kind="suspended").data


# -- the operator's routes ----------------------------------------------------------------------


def test_an_operator_creates_reads_lists_changes_and_deletes_a_floor(operator):
    floor = created(operator, quorum=2, on_expiry=["deny", "expire"])
    assert {k: floor[k] for k in ("scope", "quorum", "exclude_requester", "on_expiry", "require_linked_person")} == {
        "scope": "acme",
        "quorum": 2,
        "exclude_requester": True,
        "on_expiry": ["expire", "deny"],
        "require_linked_person": False,
    }
    assert (floor["created_by"], floor["updated_by"]) == ("token:ops", "token:ops")
    assert operator.get(f"{FLOORS}/{floor['id']}").json() == floor
    assert [f["id"] for f in operator.get(FLOORS).json()["results"]] == [floor["id"]]
    changed = patch(operator, floor["id"], {"quorum": 3, "require_linked_person": True})
    assert changed.status_code == 200, changed.content
    assert (changed.json()["quorum"], changed.json()["require_linked_person"]) == (3, True)
    row = ApprovalFloor.objects.get()
    assert (row.quorum, row.require_linked_person, row.on_expiry) == (3, True, ["expire", "deny"])
    deleted = operator.delete(f"{FLOORS}/{floor['id']}")
    assert deleted.status_code == 200 and deleted.json()["id"] == floor["id"]
    assert ApprovalFloor.objects.count() == 0


def test_the_scope_may_be_left_out_by_an_operator_of_one_scope(operator):
    response = post(operator, FLOORS, {"quorum": 2})
    assert response.status_code == 201 and response.json()["scope"] == "acme"


@pytest.mark.parametrize(
    "body",
    [
        {"quorum": 0},
        {"quorum": 6},
        {"quorum": "2"},
        {"quorum": True},
        {"exclude_requester": "yes"},
        {"require_linked_person": 1},
        {"on_expiry": []},
        {"on_expiry": ["later"]},
        {"on_expiry": "deny"},
        {"on_expiry": ["deny", "deny"]},
        {"minimum": 2},
        {"scope": "ACME"},
        {"scope": "acme//eu"},
        {"scope": 7},
    ],
)
def test_a_bad_floor_is_400_and_writes_nothing(operator, body):
    body = refused(lambda: post(operator, FLOORS, {"scope": "acme", **body}), 400, "invalid_request")
    assert body["errors"]


def test_a_second_floor_on_a_scope_is_400_naming_the_scope(operator):
    created(operator, quorum=2)
    body = refused(lambda: post(operator, FLOORS, {"scope": "acme", "quorum": 3}), 400, "invalid_request")
    assert "scope" in body["errors"]


def test_floors_on_one_path_must_share_an_on_expiry_value(operator):
    created(operator, on_expiry=["deny"])
    refused(lambda: post(operator, FLOORS, {"scope": "acme/eu", "on_expiry": ["expire"]}), 400, "invalid_request")
    below = created(operator, scope="acme/eu", on_expiry=["deny", "escalate"])
    top = ApprovalFloor.objects.get(scope="acme").id
    # Changing the upper floor is checked against the floors below it too.
    refused(lambda: patch(operator, top, {"on_expiry": ["expire"]}), 400, "invalid_request")
    refused(lambda: patch(operator, below["id"], {"on_expiry": ["expire"]}), 400, "invalid_request")
    assert patch(operator, top, {"on_expiry": ["deny", "escalate"]}).status_code == 200


def test_a_bad_change_is_400_and_changes_nothing(operator):
    floor = created(operator, quorum=2)
    refused(lambda: patch(operator, floor["id"], {"quorum": 9}), 400, "invalid_request")
    refused(lambda: patch(operator, floor["id"], {"scope": "acme/eu"}), 400, "invalid_request")
    refused(lambda: patch(operator, floor["id"], ["quorum", 3]), 400, "invalid_request")


@pytest.mark.parametrize("roles", [["engine"], ["approver"], ["auditor"], ["bus"]])
def test_only_operators_reach_the_floors(db, token, operator, roles):
    floor = created(operator, quorum=2)
    other = client(token("acme", roles, "not-ops"))
    refused(lambda: other.get(FLOORS), 403, "forbidden")
    refused(lambda: post(other, FLOORS, {"scope": "acme", "quorum": 1}), 403, "forbidden")
    refused(lambda: other.get(f"{FLOORS}/{floor['id']}"), 403, "forbidden")
    refused(lambda: patch(other, floor["id"], {"quorum": 1}), 403, "forbidden")
    refused(lambda: other.delete(f"{FLOORS}/{floor['id']}"), 403, "forbidden")


def test_an_operator_of_another_tenant_sees_and_changes_nothing(operator, globex_operator):
    floor = created(operator, quorum=2)
    assert globex_operator.get(FLOORS).json()["results"] == []
    refused(lambda: globex_operator.get(f"{FLOORS}/{floor['id']}"), 404, "not_found")
    refused(lambda: patch(globex_operator, floor["id"], {"quorum": 1}), 404, "not_found")
    # A bad body is judged first, the same for a floor one cannot see as for no floor at all.
    unseen = refused(lambda: patch(globex_operator, floor["id"], {"quorum": 99}), 400, "invalid_request")
    missing = refused(lambda: patch(globex_operator, uuid.uuid4(), {"quorum": 99}), 400, "invalid_request")
    assert unseen["errors"] == missing["errors"]
    refused(lambda: globex_operator.delete(f"{FLOORS}/{floor['id']}"), 404, "not_found")
    refused(lambda: post(globex_operator, FLOORS, {"scope": "acme", "quorum": 1}), 403, "forbidden")


def test_an_operator_below_may_add_a_floor_for_their_scope_but_not_touch_the_one_above(db, token, operator):
    top = created(operator, quorum=2)
    eu = client(token("acme/eu", ["operator"], "eu-ops"))
    refused(lambda: eu.get(f"{FLOORS}/{top['id']}"), 404, "not_found")
    refused(lambda: eu.delete(f"{FLOORS}/{top['id']}"), 404, "not_found")
    refused(lambda: post(eu, FLOORS, {"scope": "acme", "quorum": 1}), 403, "forbidden")
    assert post(eu, FLOORS, {"scope": "acme/eu", "quorum": 1}).status_code == 201


def test_an_unknown_floor_id_is_404(operator):
    refused(lambda: operator.get(f"{FLOORS}/01a22e4f-2c4d-7b1e-9a3f-5e6d7c8b9a01"), 404, "not_found")
    refused(lambda: operator.get(f"{FLOORS}/not-an-id"), 404, "not_found")


# -- what a floor does to a pause -----------------------------------------------------------------


def test_the_issues_engine_that_approved_itself_is_refused_under_a_floor(db, token, operator):
    both = client(token("acme", ["engine", "approver"], "solo"))
    before_floor = paused(both)
    created(operator)  # every default: separation of duties on
    under_floor = paused(both)
    refused(lambda: decide(both, under_floor), 403, "separation_of_duties")
    refused(lambda: decide(both, under_floor, "deny", reason="mine"), 403, "separation_of_duties")
    # A pause stored before the floor keeps the policy it was stored with.
    assert decide(both, before_floor).status_code == 201


def test_a_pause_cannot_lower_the_floor_and_what_was_applied_is_on_the_event_and_the_approval(db, token, operator):
    created(operator, quorum=2)
    engine = client(token("acme", ["engine"], "engine"))
    s = paused(engine, scope="acme/eu", quorum=1, exclude_requester=False)
    approval = approval_of(client(token("acme", ["approver"], "alice")), s)
    assert approval["policy"] == {"quorum": 2, "exclude_requester": True, "on_expiry": "expire"}
    assert approval["floor"] == {"scopes": ["acme"], "require_linked_person": False}
    assert suspended_data(s)["floor"] == {
        "scopes": ["acme"],
        "raised": ["quorum", "exclude_requester"],
        "policy": {"quorum": 2, "exclude_requester": True, "on_expiry": "expire", "require_linked_person": False},
    }
    assert decide(client(token("acme", ["approver"], "alice")), s).status_code == 202


def test_a_pause_asking_more_than_the_floor_keeps_what_it_asked(db, token, operator, engine):
    created(operator, quorum=2, on_expiry=["deny", "escalate"])
    s = paused(engine, quorum=4, on_expiry={"escalate": {"extend_seconds": 60}})
    assert approval_of(client(token("acme", ["approver"], "alice")), s)["policy"] == {
        "quorum": 4,
        "exclude_requester": True,
        "on_expiry": {"escalate": {"extend_seconds": 60}},
    }
    assert suspended_data(s)["floor"]["raised"] == []


def test_every_floor_on_the_path_applies_field_by_field(db, token, operator, engine):
    created(operator, quorum=2, on_expiry=["expire", "deny"])
    created(operator, scope="acme/eu", quorum=1, exclude_requester=False, on_expiry=["deny", "escalate"])
    created(operator, scope="acme/eu/ops", require_linked_person=True)
    s = paused(engine, scope="acme/eu/ops")
    record = approval_of(client(token("acme", ["approver"], "alice")), s)
    assert record["policy"] == {"quorum": 2, "exclude_requester": True, "on_expiry": "deny"}
    assert record["floor"] == {"scopes": ["acme", "acme/eu", "acme/eu/ops"], "require_linked_person": True}
    # A sibling scope is covered by the top floor only.
    sibling = approval_of(client(token("acme", ["approver"], "bob")), paused(engine, scope="acme/us"))
    assert sibling["floor"] == {"scopes": ["acme"], "require_linked_person": False}
    assert sibling["policy"]["on_expiry"] == "expire"


def test_an_on_expiry_the_floor_does_not_allow_is_400_naming_the_floor_and_writes_nothing(operator, engine):
    created(operator, on_expiry=["deny"])
    run = register(engine)
    body = {
        "revision": 1,
        "reason": "approval",
        "pending": [call()],
        "continuation": continuation(),
        "approval": {"on_expiry": "expire"},
    }
    found = refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", body), 400, "below_approval_floor")
    assert found["floors"] == ["acme"] and "acme" in found["detail"]


def test_other_reasons_and_other_tenants_are_not_touched(db, token, operator, engine):
    created(operator, quorum=3)
    globex = client(token("globex", ["engine"], "globex-engine"))
    s = paused(globex)
    assert approval_of(client(token("globex", ["approver"], "gina")), s)["floor"] is None
    assert "floor" not in suspended_data(s)
    run = register(engine)
    tool = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    tool_pause = post(engine, f"/api/v1/runs/{run['id']}/suspend", tool)
    assert tool_pause.status_code == 201 and "floor" not in suspended_data(tool_pause.json())


def test_the_issues_unlinked_second_token_of_the_same_person_is_refused_under_a_floor(db, token, operator):
    person = member("erin", {"acme": ["engine", "approver"]}, is_staff=True)
    _, linked = create_token(scope="acme", roles=["engine", "approver"], name="erin-engine", user=person)
    _, unlinked = create_token(scope="acme", roles=["approver"], name="erin-spare")
    alice = client(token("acme", ["approver"], "alice"))
    requester = client(linked)
    # Without a floor the unlinked token counts as a voter of its own.
    before_floor = paused(requester, quorum=2)
    assert decide(client(unlinked), before_floor).status_code == 202
    created(operator, quorum=2, require_linked_person=True)
    s = paused(requester)
    refused(lambda: decide(client(unlinked), s), 403, "person_required")
    refused(lambda: decide(client(unlinked), s, "deny", reason="x"), 403, "person_required")
    refused(lambda: decide(client(unlinked), s, "respond", response="no"), 403, "person_required")
    refused(lambda: decide(requester, s), 403, "separation_of_duties")
    assert ApprovalVote.objects.filter(suspension_id=s["id"]).count() == 0
    linked_alice = member("alice", {"acme": ["approver"]}, is_staff=True)
    _, alice_secret = create_token(scope="acme", roles=["approver"], name="alice-linked", user=linked_alice)
    assert decide(client(alice_secret), s).status_code == 202
    refused(lambda: decide(alice, s), 403, "person_required")


# -- the pure function ---------------------------------------------------------------------------


class Row:
    def __init__(
        self, scope, quorum=1, exclude_requester=False, on_expiry=(), require_linked_person=False, chain=False
    ):
        self.scope, self.quorum, self.exclude_requester = scope, quorum, exclude_requester
        self.on_expiry, self.require_linked_person = list(on_expiry), require_linked_person
        self.require_escalation = chain


def test_combine_takes_the_strictest_value_of_each_field():
    combined = floors.combine(
        [Row("acme/eu", 3, on_expiry=["deny", "escalate"]), Row("acme", 2, True, ["expire", "deny"], True)]
    )
    assert combined is not None
    assert (combined.scopes, combined.quorum, combined.exclude_requester) == (("acme", "acme/eu"), 3, True)
    assert (combined.on_expiry, combined.require_linked_person) == (("deny",), True)
    assert floors.combine([]) is None


def test_apply_without_a_floor_is_the_policy_as_asked():
    applied = floors.apply(None, {"quorum": 2, "exclude_requester": False})
    assert (applied.columns["quorum"], applied.columns["exclude_requester"], applied.event_data()) == (2, False, {})


def test_apply_picks_an_allowed_on_expiry_only_when_the_pause_left_it_out():
    floor = floors.combine([Row("acme", on_expiry=["escalate"])])
    with pytest.raises(BelowApprovalFloor):
        floors.apply(floor, None)  # escalate needs extend_seconds: nothing to pick
    with pytest.raises(BelowApprovalFloor):
        floors.apply(floors.combine([Row("acme", on_expiry=["deny"])]), {"on_expiry": "expire"})
    assert floors.apply(floors.combine([Row("acme", on_expiry=["deny"])]), {}).columns["on_expiry"] == "deny"


@pytest.mark.django_db(transaction=True)
def test_a_floor_applies_on_the_attempt_path_outside_a_transaction_too(token):
    """Outside a test's transaction a suspend is tried as one guarded statement: the floor is read before it."""
    operator = client(token("acme", ["operator"], "ops"))
    both = client(token("acme", ["engine", "approver"], "solo"))
    created(operator, quorum=2)
    s = paused(both)
    assert approval_of(both, s)["policy"]["quorum"] == 2
    assert suspended_data(s)["floor"]["raised"] == ["quorum", "exclude_requester"]
    refused(lambda: decide(both, s), 403, "separation_of_duties")
