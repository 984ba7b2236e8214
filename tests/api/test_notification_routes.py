"""Notification routes (docs/notifications.md, "Routes"): operators add an email address or a Slack channel to a scope's
approvals.

Shaped and scoped like the webhooks: the operator role, a route of a scope
covers the scopes below it, other scopes' routes are 404, and every refusal
is a problem that writes nothing (tests.helpers.refused, whose snapshot holds the routes).
"""

import pytest

from suspensions.models import NotificationRoute, SlackChannel
from tests.helpers import client, grant_channel, post, refused

ROUTES = "/api/v1/notification-routes"


@pytest.fixture
def operator(db, token):
    return client(token("acme", ["operator"], "ops"))


def created(c, **body):
    response = post(c, ROUTES, {"scope": "acme", "kind": "email", "target": "oncall@example.com", **body})
    assert response.status_code == 201, response.content
    return response.json()


def test_an_operator_creates_reads_lists_disables_enables_and_deletes_a_route(operator):
    route = created(operator, event_types=["approval.requested"], description="on call")
    assert {k: route[k] for k in ("scope", "kind", "target", "event_types", "active", "description")} == {
        "scope": "acme",
        "kind": "email",
        "target": "oncall@example.com",
        "event_types": ["approval.requested"],
        "active": True,
        "description": "on call",
    }
    assert route["created_by"] == "token:ops"
    one = f"{ROUTES}/{route['id']}"
    assert operator.get(one).json() == route
    assert [r["id"] for r in operator.get(ROUTES).json()["results"]] == [route["id"]]

    assert operator.post(f"{one}/disable").json()["active"] is False
    assert operator.post(f"{one}/disable").json()["active"] is False  # again: nothing changes
    assert operator.post(f"{one}/enable").json()["active"] is True

    assert operator.delete(one).json()["id"] == route["id"]
    assert not NotificationRoute.objects.exists()
    assert operator.get(one).status_code == 404


def test_a_slack_route_takes_a_channel_id_and_scope_may_be_left_out_by_an_operator_of_one_scope(operator):
    grant_channel("C0123ABC", "acme")
    response = post(operator, ROUTES, {"kind": "slack", "target": "C0123ABC"})
    assert response.status_code == 201, response.content
    assert (response.json()["scope"], response.json()["target"]) == ("acme", "C0123ABC")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "email", "target": "not-an-address"}, "target"),
        ({"kind": "email", "target": "a@" + "b" * 320 + ".com"}, "target"),
        ({"kind": "slack", "target": "#approvals"}, "target"),
        ({"kind": "slack", "target": "c0123abc"}, "target"),
        ({"kind": "sms", "target": "+15550100"}, "kind"),
        ({"kind": "email"}, "target"),
        ({"kind": "email", "target": "a@example.com", "event_types": ["run.finished"]}, "event_types"),
        ({"kind": "email", "target": "a@example.com", "event_types": "approval.requested"}, "event_types"),
        ({"kind": "email", "target": "a@example.com", "scope": "acme//x"}, "scope"),
        ({"kind": "email", "target": "a@example.com", "description": "x" * 501}, "description"),
        ({"kind": "email", "target": "a@example.com", "color": "red"}, None),
    ],
)
def test_a_bad_field_is_a_400_problem_and_writes_nothing(operator, body, field):
    problem = refused(lambda: post(operator, ROUTES, {"scope": "acme", **body}), 400, "invalid_request")
    if field is not None:
        assert field in problem["errors"]


def test_a_route_in_a_scope_where_the_caller_is_no_operator_is_refused(db, token, operator):
    theirs = created(client(token("globex", ["operator"], "globex-ops")), scope="globex")
    approver = client(token("acme", ["approver"], "approver"))

    refused(lambda: post(operator, ROUTES, {"scope": "globex", "kind": "email", "target": "a@x.io"}), 403, "forbidden")
    refused(lambda: operator.get(f"{ROUTES}/{theirs['id']}"), 404, "not_found")
    refused(lambda: operator.delete(f"{ROUTES}/{theirs['id']}"), 404, "not_found")
    refused(lambda: operator.post(f"{ROUTES}/{theirs['id']}/disable"), 404, "not_found")
    refused(lambda: approver.get(ROUTES), 403, "forbidden")
    refused(lambda: post(approver, ROUTES, {"scope": "acme", "kind": "email", "target": "a@x.io"}), 403, "forbidden")
    assert operator.get(ROUTES).json()["results"] == []


def test_an_operator_of_a_parent_scope_sees_and_manages_the_routes_below_it(db, token):
    below = created(client(token("acme/support", ["operator"], "support-ops")), scope="acme/support")
    parent = client(token("acme", ["operator"], "ops"))

    assert [r["id"] for r in parent.get(ROUTES).json()["results"]] == [below["id"]]
    assert parent.post(f"{ROUTES}/{below['id']}/disable").json()["active"] is False


# -- a Slack channel belongs to one scope (docs/notifications.md, Granting a channel) --


@pytest.mark.parametrize("granted_to", ["globex", "acme/billing"])
def test_a_slack_route_to_a_channel_granted_to_another_scope_is_400_naming_target(operator, granted_to):
    grant_channel("C0GLOBEX", granted_to)

    body = refused(
        lambda: post(operator, ROUTES, {"scope": "acme/support", "kind": "slack", "target": "C0GLOBEX"}),
        400,
        "invalid_request",
    )

    assert "target" in body["errors"]


def test_the_first_route_to_a_channel_nobody_holds_claims_it_for_its_workspace_and_another_tenant_is_then_refused(
    operator, token
):
    response = post(operator, ROUTES, {"scope": "acme/support", "kind": "slack", "target": "C0FRESH"})

    assert response.status_code == 201, response.content
    assert SlackChannel.objects.get(channel_id="C0FRESH").scope == "acme"
    rival = client(token("globex", ["operator"], "globex-ops"))
    body = refused(
        lambda: post(rival, ROUTES, {"scope": "globex", "kind": "slack", "target": "C0FRESH"}), 400, "invalid_request"
    )
    assert "target" in body["errors"]
    assert post(operator, ROUTES, {"scope": "acme/billing", "kind": "slack", "target": "C0FRESH"}).status_code == 201


def test_a_slack_channel_granted_to_the_workspace_serves_routes_of_its_projects(operator):
    grant_channel("C0ACME", "acme")

    response = post(operator, ROUTES, {"scope": "acme/support", "kind": "slack", "target": "C0ACME"})

    assert response.status_code == 201, response.content
