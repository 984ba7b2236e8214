"""Notification routes (docs/api.md, "Notification routes"; docs/notifications.md); every route is the operator's."""

from drf_spectacular.utils import OpenApiExample

from . import samples as v
from .base import Doc, answer, ex, refusal

ONE_ROUTE: dict[int, tuple[str, ...]] = {403: ("forbidden",), 404: ("not_found",)}
# A keyed action replayed after the route was deleted (docs/api.md §4).
KEYED_ROUTE: dict[int, tuple[str, ...]] = {**ONE_ROUTE, 410: ("deleted_since",)}
TAG = "notification routes"

OPERATIONS = {
    "create_notification_route": Doc(
        tag=TAG,
        role="operator",
        summary="Create a notification route",
        description="`kind` `email` sends the approval emails of `scope` and every scope below it to `target`, an "
        "address; `slack` posts them to `target`, a Slack channel id (`C0123ABC`), when Slack is configured. "
        "`event_types` (`approval.requested`, `approval.escalated`, `approval.decided`, `suspension.expired`) "
        "empty or absent means all of them. `scope` may be left out by an operator in exactly one scope. "
        "Approvers get their own email without a route. Not idempotent: a retried create makes a second route, "
        "which asks nobody twice.",
        errors={400: ("invalid_request",), 403: ("forbidden",), 410: ("deleted_since",), 413: ("request_too_large",)},
    ),
    "list_notification_routes": Doc(
        tag=TAG,
        role="operator",
        summary="List notification routes",
        description="The routes of the caller's operator scopes, newest first.",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "get_notification_route": Doc(
        tag=TAG,
        role="operator",
        summary="Read a notification route",
        description="One route of the caller's operator scopes.",
        errors=ONE_ROUTE,
    ),
    "delete_notification_route": Doc(
        tag=TAG,
        role="operator",
        summary="Delete a notification route",
        description="Answers the route as it was; the notifications it asked for are kept.",
        errors=ONE_ROUTE,
    ),
    "disable_notification_route": Doc(
        tag=TAG,
        role="operator",
        summary="Disable a notification route",
        description="It asks nobody from now on; disabling a disabled route changes nothing. No body.",
        errors=KEYED_ROUTE,
    ),
    "enable_notification_route": Doc(
        tag=TAG,
        role="operator",
        summary="Enable a notification route",
        description="It asks again from the next approval event on. No body.",
        errors=KEYED_ROUTE,
    ),
}

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "create_notification_route": [
        ex("an on-call inbox", {"kind": "email", "target": "oncall@example.com", "description": "the on-call inbox"}),
        ex(
            "a Slack channel",
            {"scope": "demo", "kind": "slack", "target": "C0123ABC", "event_types": ["approval.requested"]},
        ),
        answer("created", v.route(), 201),
    ],
    "list_notification_routes": [answer("a page", v.route(), 200)],
    "get_notification_route": [answer("a route", v.route(), 200)],
    "delete_notification_route": [answer("deleted", v.route(), 200)],
    "disable_notification_route": [answer("disabled", v.route(active=False), 200)],
    "enable_notification_route": [answer("enabled", v.route(), 200)],
}

REFUSALS: dict[str, list[OpenApiExample]] = {
    "create_notification_route": [
        refusal(
            "a channel name, not its id",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                "target is not a Slack channel id",
                errors={"target": ["A Slack channel id, like C0123ABC (not its #name)."]},
            ),
        )
    ],
}
