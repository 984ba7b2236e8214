"""Escalation chains at suspend (docs/policies.md, "Escalation chains"): `approval.escalation` steps are validated
before anything is written, a 400 naming the path otherwise, and a floor may require a chain."""

import pytest

from suspensions.clock import db_now
from suspensions.models import Approval, ApprovalFloor, Event
from tests.helpers import call, client, continuation, post, refused, register

pytestmark = pytest.mark.usefixtures("chains_intact")

SCOPE = "acme/support"


@pytest.fixture
def engine(db, token):
    return client(token(SCOPE, ["engine"], "engine"))


def suspend(c, *, ttl=3600, **policy):
    run = register(c, SCOPE)
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": [call()],
        "continuation": continuation(),
        "ttl_seconds": ttl,
        "approval": policy,
    }
    return post(c, f"/api/v1/runs/{run['id']}/suspend", body)


def step(after, **notify):
    return {"after_seconds": after, "notify": notify or {"groups": ["leads"]}}


CHAIN = [step(60, people=["ann"]), step(600, groups=["leads"]), step(1800, scopes=["acme"])]


def test_a_chain_is_kept_on_the_approval_with_its_first_step_due_after_its_after_seconds(engine):
    answer = suspend(engine, escalation=CHAIN)
    assert answer.status_code == 201, answer.content
    record = Approval.objects.get(pk=answer.json()["id"])
    assert record.chain == [
        {"after_seconds": 60, "notify": {"scopes": [], "groups": [], "people": ["ann"]}},
        {"after_seconds": 600, "notify": {"scopes": [], "groups": ["leads"], "people": []}},
        {"after_seconds": 1800, "notify": {"scopes": ["acme"], "groups": [], "people": []}},
    ]
    assert (record.escalation_step, (record.next_escalation_at - record.created_at).total_seconds()) == (0, 60)
    assert record.policy["escalation"] == record.chain


def test_a_plain_approval_shows_no_chain(engine):
    answer = suspend(engine)
    record = Approval.objects.get(pk=answer.json()["id"])
    assert (record.escalation, record.next_escalation_at, "escalation" in record.policy) == ("", None, False)


@pytest.mark.parametrize(
    "chain, path",
    [
        ([step(600), step(600)], ["1", "after_seconds"]),
        ([step(600), step(60)], ["1", "after_seconds"]),
        ([step(i + 1) for i in range(11)], []),
        ([step(0)], ["0", "after_seconds"]),
        ([step(60, groups=[])], ["0", "notify"]),
        ([{"after_seconds": 60, "notify": {"teams": ["x"]}}], ["0", "notify", "teams"]),
        ([{"after_seconds": 60}], ["0", "notify"]),
        ([{"after_seconds": "60", "notify": {"people": ["ann"]}}], ["0", "after_seconds"]),
        ([step(60, scopes=["not a scope!"])], ["0", "notify", "scopes"]),
        ([step(60, people=["line\nbreak"])], ["0", "notify", "people"]),
        ([step(3600)], ["0", "after_seconds"]),  # at the deadline: not before it
        ([step(60), step(7200)], ["1", "after_seconds"]),
        ([step(60, scopes=["acme/support/eu"])], ["0", "notify"]),  # below the pause's scope
        ([step(60, scopes=["globex"])], ["0", "notify"]),  # another tenant
        ("soon", []),
    ],
)
def test_a_bad_chain_is_a_400_naming_its_path_and_writes_nothing(engine, chain, path):
    run = register(engine, SCOPE)
    body = {
        "revision": 1,
        "reason": "approval",
        "pending": [call()],
        "continuation": continuation(),
        "ttl_seconds": 3600,
        "approval": {"escalation": chain},
    }
    answer = refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", body), 400, "invalid_request")
    errors = answer["errors"]["approval"]["escalation"]
    for key in path:
        assert key in errors, (path, answer["errors"])
        errors = errors[key]


def test_a_chain_on_a_pause_without_a_deadline_is_allowed(engine):
    assert suspend(engine, ttl=0, escalation=[step(60)]).status_code == 201


def floor(scope="acme", **fields):
    row = ApprovalFloor(quorum=1, exclude_requester=False, on_expiry=[], **fields)
    row.created_at = row.updated_at = db_now()
    row.created_by = row.updated_by = "root"
    row.stamp_scope(scope)
    row.save()
    return row


def test_a_floor_requiring_a_chain_refuses_a_pause_without_one_naming_the_floor_and_writes_nothing(engine):
    floor(require_escalation=True)
    run = register(engine, SCOPE)
    body = {"revision": 1, "reason": "approval", "pending": [call()], "continuation": continuation()}
    answer = refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", body), 400, "below_approval_floor")
    assert answer["floors"] == ["acme"]
    assert "escalation" in answer["errors"]["approval"]
    assert suspend(engine, escalation=[step(60)]).status_code == 201
    assert Event.objects.filter(kind="suspended").count() == 1


def test_operators_set_require_escalation_through_the_floor_api(db, token):
    operator = client(token("acme", ["operator"], "ops"))
    made = post(operator, "/api/v1/approval-floors", {"scope": "acme", "require_escalation": True})
    assert made.status_code == 201, made.content
    assert made.json()["require_escalation"] is True
    changed = operator.patch(
        f"/api/v1/approval-floors/{made.json()['id']}", {"require_escalation": False}, format="json"
    )
    assert changed.json()["require_escalation"] is False
    bad = post(operator, "/api/v1/approval-floors", {"scope": "acme/eu", "require_escalation": "yes"})
    assert bad.status_code == 400 and "require_escalation" in bad.json()["errors"]


def test_combine_names_every_floor_on_the_path_that_requires_a_chain():
    from suspensions import floors
    from tests.api.test_approval_floors import Row

    combined = floors.combine([Row("acme/eu", chain=True), Row("acme"), Row("acme/eu/ops", chain=True)])
    assert combined is not None and combined.require_escalation == ("acme/eu", "acme/eu/ops")
    assert floors.combine([Row("acme")]).require_escalation == ()


def test_the_approval_shows_its_chain_in_its_policy_as_documented(engine, token):
    from tests.api.test_openapi import BY_ID, assert_shape, documented

    answer = suspend(engine, escalation=CHAIN)
    reader = client(token(SCOPE, ["approver"], "reader"))
    body = reader.get(f"/api/v1/approvals/{answer.json()['id']}").json()
    assert [s["after_seconds"] for s in body["policy"]["escalation"]] == [60, 600, 1800]
    _, _, operation = BY_ID["get_approval"]
    assert_shape(body, documented(operation, 200, "application/json")["schema"], "get_approval")
