"""Webhook endpoints and their messages (docs/api.md §7.8, §8); every route is the operator's."""

from drf_spectacular.utils import OpenApiExample

from . import samples as v
from .base import Doc, answer, ex, refusal

ONE_ENDPOINT: dict[int, tuple[str, ...]] = {403: ("forbidden",), 404: ("not_found",)}

OPERATIONS = {
    "create_webhook": Doc(
        tag="webhooks",
        role="operator",
        summary="Create a webhook endpoint",
        description="`url` is http or https (at most 2000 characters, no credentials); `scope` may be left "
        "out when the caller is an operator in exactly one scope; `event_types` empty or absent means every "
        "type; `format` is `standard` (signed, Standard Webhooks) or `slack`. The signing `secret` appears in "
        "this answer only. Not idempotent: a retried create makes a second endpoint.",
        errors={400: ("invalid_request",), 403: ("forbidden",), 413: ("request_too_large",)},
    ),
    "list_webhooks": Doc(
        tag="webhooks",
        role="operator",
        summary="List webhook endpoints",
        description="The endpoints of the caller's operator scopes, newest first; never a secret.",
        errors={400: ("invalid_request",), 403: ("forbidden",)},
    ),
    "get_webhook": Doc(
        tag="webhooks",
        role="operator",
        summary="Read a webhook endpoint",
        description="One endpoint, never its secret.",
        errors=ONE_ENDPOINT,
    ),
    "disable_webhook": Doc(
        tag="webhooks",
        role="operator",
        summary="Disable a webhook endpoint",
        description="Stops deliveries; pending messages wait and go out once the endpoint is enabled again. "
        "Disabling a disabled endpoint changes nothing. No body.",
        errors=ONE_ENDPOINT,
    ),
    "enable_webhook": Doc(
        tag="webhooks",
        role="operator",
        summary="Enable a webhook endpoint",
        description="Delivers again, after an operator's disable or a receiver's `410 Gone`. No body.",
        errors=ONE_ENDPOINT,
    ),
    "rotate_webhook_secret": Doc(
        tag="webhooks",
        role="operator",
        summary="Rotate a webhook's signing secret",
        description="Answers the endpoint with the new `secret` (shown once). The previous secret signs beside "
        "it until `previous_secret_expires_at` (24 hours). No body.",
        errors=ONE_ENDPOINT,
    ),
    "test_webhook": Doc(
        tag="webhooks",
        role="operator",
        summary="Send a test event",
        description="Queues a `webhook.test` message for this endpoint only; answers 202 with the message. No body.",
        errors={**ONE_ENDPOINT, 409: ("invalid_state",)},
    ),
    "list_webhook_messages": Doc(
        tag="webhooks",
        role="operator",
        summary="List a webhook's messages",
        description="Newest first, each with its delivery attempts. `id` is the `webhook-id` header of every "
        "attempt: receivers dedupe on it.",
        errors={400: ("invalid_request",), **ONE_ENDPOINT},
    ),
    "redeliver_webhook_message": Doc(
        tag="webhooks",
        role="operator",
        summary="Redeliver a message",
        description="A delivered or failed message becomes pending again, due now, its attempts kept; "
        "answers 202 with the message. A pending message or a disabled endpoint is a 409. No body.",
        errors={**ONE_ENDPOINT, 409: ("invalid_state",)},
    ),
}

SECRET = "whsec_neABZMy/l0lfc0hCC4zPaPTs0+xsq/Tarjuak8aHo3s="

EXAMPLES: dict[str, list[OpenApiExample]] = {
    "create_webhook": [
        ex("every event", {"url": "https://hooks.example.com/suspensions", "description": "docs receiver"}),
        ex(
            "approvals to Slack",
            {
                "url": "https://hooks.slack.com/services/T000/B000/XXXX",
                "scope": "demo",
                "event_types": ["approval.requested"],
                "format": "slack",
            },
        ),
        answer("created", {**v.endpoint(), "secret": SECRET}, 201),
    ],
    "list_webhooks": [answer("a page", v.endpoint(), 200)],
    "get_webhook": [answer("an endpoint", v.endpoint(), 200)],
    "disable_webhook": [answer("disabled", v.endpoint(active=False, disabled_reason=f"disabled by {v.OPERATOR}"), 200)],
    "enable_webhook": [answer("enabled", v.endpoint(), 200)],
    "rotate_webhook_secret": [
        answer("rotated", {**v.endpoint(previous_secret_expires_at=v.LATER), "secret": SECRET}, 200)
    ],
    "test_webhook": [answer("queued", v.message(), 202)],
    "list_webhook_messages": [
        answer(
            "delivered",
            v.message(
                status="delivered",
                attempt_count=1,
                delivered_at=v.AT,
                attempts=[{"number": 1, "at": v.AT, "status_code": 204, "error": "", "duration_ms": 1}],
            ),
            200,
        )
    ],
    "redeliver_webhook_message": [answer("pending again", v.message(attempt_count=1), 202)],
}

REFUSALS: dict[str, list[OpenApiExample]] = {
    "create_webhook": [
        refusal(
            "not http",
            v.problem(
                400,
                "invalid_request",
                "Invalid request",
                "url is not usable: Only http and https URLs are allowed.",
                errors={"url": ["Only http and https URLs are allowed."]},
            ),
        )
    ],
}
