"""Notification routes through the client (docs/notifications.md, "Routes"), against the live server."""

import pytest
from suspensions_client import InvalidRequest, NotFound, NotificationRoute

from suspensions.models import NotificationRoute as RouteRow

pytestmark = pytest.mark.slow


def test_an_operator_manages_a_route_and_a_resent_create_is_the_same_route(connect):
    operator = connect("operator")
    route = operator.create_notification_route(
        kind="email", target="oncall@example.com", scope="acme", description="on call", idempotency_key="route-1"
    )
    assert isinstance(route, NotificationRoute)
    assert (route.kind, route.target, route.scope, route.active, route.event_types) == (
        "email",
        "oncall@example.com",
        "acme",
        True,
        [],
    )
    again = operator.create_notification_route(
        kind="email", target="oncall@example.com", scope="acme", description="on call", idempotency_key="route-1"
    )
    assert again.id == route.id and RouteRow.objects.count() == 1
    assert [r.id for r in operator.list_notification_routes().results] == [route.id]
    assert operator.get_notification_route(route.id) == route
    assert operator.disable_notification_route(route.id).active is False
    assert operator.enable_notification_route(route.id).active is True
    assert operator.delete_notification_route(route.id).id == route.id
    with pytest.raises(NotFound):
        operator.get_notification_route(route.id)
    assert RouteRow.objects.count() == 0


def test_a_slack_route_needs_a_channel_id_and_a_refusal_writes_nothing(connect):
    operator = connect("operator")
    with pytest.raises(InvalidRequest) as refused:
        operator.create_notification_route(kind="slack", target="#approvals", scope="acme")
    assert "target" in refused.value.problem["errors"]
    assert RouteRow.objects.count() == 0
