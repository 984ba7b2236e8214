"""Delegation through the API (docs/api.md, "Delegation"; docs/identity.md, "Delegation"): create, list, end; a
delegate decides `acting_for` the delegator, recorded everywhere; quorum counts people represented; refusals write
nothing."""

from datetime import timedelta

import pytest
from django.utils import timezone

from suspensions.models import Admission, Approval, ApprovalVote, Delegation, Event, OutboxEvent
from suspensions.tokens import create_token
from tests.helpers import approval_pause, client, member, post, problem, refused

pytestmark = pytest.mark.usefixtures("chains_intact")

SCOPE = "acme/support"


@pytest.fixture
def people(db):
    """alice, carol and dave approve in acme; bob approves nowhere; erin is the engine's person (the requester)."""
    found = {
        "alice": member("alice", {"acme": ["approver"]}, is_staff=True, email="alice@example.com"),
        "bob": member("bob", {"other": ["approver"]}, is_staff=True, email="bob@example.com"),
        "carol": member("carol", {"acme": ["approver"]}, is_staff=True, email="carol@example.com"),
        "dave": member("dave", {"acme": ["approver"]}, is_staff=True, email="dave@example.com"),
        "erin": member("erin", {"acme": ["approver", "engine"]}, is_staff=True, email="erin@example.com"),
    }
    return found


def as_person(user, scope="acme", roles=("approver",)):
    _, secret = create_token(scope=scope, roles=roles, name=f"{user.username}-phone", user=user)
    return client(secret)


def delegate(c, **body):
    body = {"to": "bob", "scope": "acme", "ends_at": (timezone.now() + timedelta(days=3)).isoformat(), **body}
    return post(c, "/api/v1/delegations", body)


def decide(c, record, decision="approve", **body):
    version = {"run_id": str(record.run_id), "suspension_id": str(record.pk), "run_revision": 2}
    return post(c, f"/api/v1/approvals/{record.pk}/decide", {"version": version, "decision": decision, **body})


def bob(people):
    return as_person(people["bob"], scope="other")


# -- creating, listing, ending ----------------------------------------------------------------


def test_a_person_delegates_their_own_approvals_and_both_see_it(people):
    alice = as_person(people["alice"])
    response = delegate(alice, reason="On leave")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["from"], body["to"], body["scope"], body["active"], body["reason"]) == (
        "alice",
        "bob",
        "acme",
        True,
        "On leave",
    )
    assert body["created_by"] == "token:alice-phone"
    assert [d["id"] for d in bob(people).get("/api/v1/delegations").json()["results"]] == [body["id"]]
    assert as_person(people["carol"]).get("/api/v1/delegations").json()["results"] == []
    assert as_person(people["carol"]).get(f"/api/v1/delegations/{body['id']}").status_code == 404


def test_an_operator_delegates_for_someone_in_their_scope(people, token):
    operator = client(token("acme", ["operator"], "ops"))
    response = delegate(operator, **{"from": "carol", "to": "dave"})
    assert response.status_code == 201, response.content
    assert (response.json()["from"], response.json()["to"]) == ("carol", "dave")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"to": "alice"}, 400, "invalid_request"),  # to oneself
        ({"to": "nobody"}, 400, "invalid_request"),
        ({"scope": "not a scope"}, 400, "invalid_request"),
        ({"ends_at": "2020-01-01T00:00:00Z"}, 400, "invalid_request"),
        ({"ends_at": "tomorrow"}, 400, "invalid_request"),
        ({"starts_at": "2099-01-02T00:00:00Z", "ends_at": "2099-01-01T00:00:00Z"}, 400, "invalid_request"),
        ({"starts_at": "2098-01-01T00:00:00Z", "ends_at": "2099-06-01T00:00:00Z"}, 400, "invalid_request"),
        ({"scope": "globex"}, 403, "forbidden"),  # alice holds nothing there
        ({"from": "carol"}, 403, "forbidden"),  # another person's: an operator's
        ({"surprise": 1}, 400, "invalid_request"),
    ],
)
def test_a_bad_delegation_is_refused_and_nothing_is_written(people, body, status, code):
    alice = as_person(people["alice"])
    before = Delegation.objects.count()
    refused(lambda: delegate(alice, **body), status, code)
    assert Delegation.objects.count() == before


def test_a_delegation_to_an_inactive_person_is_refused(people):
    people["bob"].is_active = False
    people["bob"].save()
    refused(lambda: delegate(as_person(people["alice"])), 400, "invalid_request")
    assert not Delegation.objects.exists()


def test_ending_a_delegation_stops_the_delegate_at_once(people):
    made = delegate(as_person(people["alice"])).json()
    ended = post(bob(people), f"/api/v1/delegations/{made['id']}/end", {})
    assert ended.status_code == 200, ended.content
    assert (ended.json()["active"], ended.json()["ended_by"]) == (False, "token:bob-phone")
    again = post(as_person(people["alice"]), f"/api/v1/delegations/{made['id']}/end", {})
    assert again.json()["ended_by"] == "token:bob-phone"  # already ended: answered as it is
    record = approval_pause(SCOPE, by=people["erin"])
    refused(lambda: decide(bob(people), record, acting_for="alice"), 403, "not_delegated")


# -- deciding for someone -----------------------------------------------------------------------


def test_a_delegate_approves_for_the_delegator_and_every_record_names_both(people):
    delegate(as_person(people["alice"]))
    record = approval_pause(SCOPE, by=people["erin"])
    response = decide(bob(people), record, reason="for alice", acting_for="alice")
    assert response.status_code == 201, response.content
    record.refresh_from_db()
    assert (record.status, record.decided_by, record.acting_for) == ("approved", "token:bob-phone", "user:alice")
    admitted = Event.objects.get(run_id=record.run_id, kind="admitted")
    assert (admitted.actor, admitted.data["acting_for"]) == ("token:bob-phone", "user:alice")
    decided = OutboxEvent.objects.get(run_id=record.run_id, type="approval.decided")
    assert (decided.data["decided_by"], decided.data["acting_for"]) == ("token:bob-phone", "user:alice")
    shown = as_person(people["alice"]).get(f"/api/v1/approvals/{record.pk}").json()
    assert (shown["decided_by"], shown["acting_for"]) == ("token:bob-phone", "user:alice")


def test_a_delegate_denies_for_the_delegator_and_the_webhook_names_both(people):
    delegate(as_person(people["alice"]))
    record = approval_pause(SCOPE, by=people["erin"])
    response = decide(bob(people), record, "deny", reason="not now", acting_for="alice")
    assert response.status_code == 201, response.content
    denied = Event.objects.get(run_id=record.run_id, kind="denied")
    assert denied.data["acting_for"] == "user:alice"
    decided = OutboxEvent.objects.get(run_id=record.run_id, type="approval.decided")
    assert (decided.data["decision"], decided.data["acting_for"]) == ("deny", "user:alice")


def test_a_decision_without_acting_for_carries_no_acting_for(people):
    record = approval_pause(SCOPE, by=people["erin"])
    assert decide(as_person(people["carol"]), record).status_code == 201
    assert "acting_for" not in OutboxEvent.objects.get(run_id=record.run_id, type="approval.decided").data
    assert as_person(people["carol"]).get(f"/api/v1/approvals/{record.pk}").json()["acting_for"] is None


def test_a_person_and_their_delegate_count_once_toward_the_quorum(people):
    delegate(as_person(people["alice"]))
    record = approval_pause(SCOPE, by=people["erin"], quorum=2)
    assert decide(as_person(people["alice"]), record).status_code == 202
    again = decide(bob(people), record, acting_for="alice")
    assert (again.status_code, again.json()["votes"]) == (200, 1)  # alice's vote, replayed: not a second one
    other = decide(bob(people), record, reason="different", acting_for="alice")
    assert problem(other, 409, "vote_mismatch")["detail"].startswith("user:alice, whom you act for, already")
    assert ApprovalVote.objects.filter(suspension_id=record.pk).count() == 1
    assert decide(as_person(people["carol"]), record).status_code == 201


def test_a_delegate_voting_for_two_people_counts_two_people(people):
    delegate(as_person(people["alice"]))
    delegate(as_person(people["dave"]))
    record = approval_pause(SCOPE, by=people["erin"], quorum=2)
    first = decide(bob(people), record, acting_for="alice")
    assert (first.status_code, first.json()["votes"]) == (202, 1)
    assert decide(bob(people), record, acting_for="dave").status_code == 201
    votes = ApprovalVote.objects.filter(suspension_id=record.pk).order_by("cast_at")
    assert [(v.voter, v.acting_for) for v in votes] == [
        ("token:bob-phone", "user:alice"),
        ("token:bob-phone", "user:dave"),
    ]
    shown = as_person(people["alice"]).get(f"/api/v1/approvals/{record.pk}").json()
    assert [v["acting_for"] for v in shown["votes"]] == ["user:alice", "user:dave"]
    assert Admission.objects.filter(suspension_id=record.pk).count() == 1


def test_nobody_decides_for_the_requester_whatever_the_policy(people):
    delegate(as_person(people["erin"]))
    record = approval_pause(SCOPE, by=people["erin"], exclude_requester=False)
    refused(lambda: decide(bob(people), record, acting_for="erin"), 403, "separation_of_duties")
    refused(lambda: decide(bob(people), record, "deny", reason="x", acting_for="erin"), 403, "separation_of_duties")


def test_the_requesters_delegate_may_not_decide_as_themselves_either_under_exclude_requester(people):
    delegate(as_person(people["alice"]), to="erin")
    record = approval_pause(SCOPE, by=people["erin"], exclude_requester=True)
    erin = as_person(people["erin"])
    refused(lambda: decide(erin, record, acting_for="alice"), 403, "separation_of_duties")


@pytest.mark.parametrize(
    "window",
    [
        {"starts_at": "2098-01-01T00:00:00Z", "ends_at": "2098-02-01T00:00:00Z"},  # not started
        {"scope": "acme/billing"},  # another subtree
    ],
)
def test_acting_for_needs_a_delegation_holding_now_in_the_approvals_scope(people, window):
    assert delegate(as_person(people["alice"]), **window).status_code == 201
    record = approval_pause(SCOPE, by=people["erin"])
    body = refused(lambda: decide(bob(people), record, acting_for="alice"), 403, "not_delegated")
    assert "alice" in body["detail"]


def test_acting_for_someone_without_any_delegation_is_refused(people):
    record = approval_pause(SCOPE, by=people["erin"])
    refused(lambda: decide(bob(people), record, acting_for="carol"), 403, "not_delegated")
    refused(lambda: decide(bob(people), record, acting_for="nobody-at-all"), 403, "not_delegated")


def test_a_past_delegation_allows_nothing(people):
    made = delegate(as_person(people["alice"])).json()
    Delegation.objects.filter(pk=made["id"]).update(
        starts_at=timezone.now() - timedelta(days=2), ends_at=timezone.now() - timedelta(days=1)
    )
    record = approval_pause(SCOPE, by=people["erin"])
    refused(lambda: decide(bob(people), record, acting_for="alice"), 403, "not_delegated")


def test_a_delegator_who_lost_the_approver_role_lends_nothing(people):
    delegate(as_person(people["alice"]))
    people["alice"].memberships.all().delete()
    record = approval_pause(SCOPE, by=people["erin"])
    refused(lambda: decide(bob(people), record, acting_for="alice"), 403, "not_delegated")


def test_acting_for_must_name_someone(people):
    record = approval_pause(SCOPE, by=people["erin"])
    refused(lambda: decide(bob(people), record, acting_for="  "), 400, "invalid_request")
    refused(lambda: decide(bob(people), record, acting_for=7), 400, "invalid_request")
    assert Approval.objects.get(pk=record.pk).status == "pending"
