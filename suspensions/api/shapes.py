"""Response shapes, for the OpenAPI schema.

presenters.py renders them; tests/api/test_shapes.py holds both to the same fields.
"""

from typing import Any

from rest_framework import serializers

from ..models import WebhookFormat


class RunOut(serializers.Serializer):
    id = serializers.UUIDField()
    scope = serializers.CharField()
    agent_id = serializers.CharField()
    session_id = serializers.CharField()
    state = serializers.CharField()
    revision = serializers.IntegerField()
    error = serializers.CharField()
    last_reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    suspension_id = serializers.SerializerMethodField()

    def get_suspension_id(self, run: Any) -> str | None:
        return getattr(run, "live_suspension_id", None)


class EventOut(serializers.Serializer):
    id = serializers.IntegerField()
    run_id = serializers.UUIDField()
    scope = serializers.CharField()
    kind = serializers.CharField()
    actor = serializers.CharField()
    revision = serializers.IntegerField()
    data = serializers.JSONField()  # type: ignore[assignment]
    at = serializers.DateTimeField()


class PendingCallOut(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    arguments = serializers.CharField()
    reply_with = serializers.CharField(required=False)


class SuspensionSummaryOut(serializers.Serializer):
    id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    scope = serializers.CharField()
    agent_id = serializers.CharField()
    reason = serializers.CharField()
    pending = PendingCallOut(many=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    run_revision = serializers.IntegerField()
    run_state = serializers.CharField()
    correlation_id = serializers.CharField(allow_null=True)


class SuspensionOut(serializers.Serializer):
    id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    scope = serializers.CharField()
    reason = serializers.CharField()
    pending = PendingCallOut(many=True)
    continuation = serializers.JSONField()
    expires_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    correlation_id = serializers.CharField(allow_null=True)
    run_revision = serializers.IntegerField(required=False)
    run_state = serializers.CharField(required=False)


class VersionOut(serializers.Serializer):
    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    run_revision = serializers.IntegerField()


class AdmissionReceiptOut(serializers.Serializer):
    id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    scope = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    # Only in lists and `latest`: the receipt itself is immutable, the state is not.
    state = serializers.CharField(required=False)
    version = VersionOut()
    request_digest = serializers.CharField()
    suspension_digest = serializers.CharField()
    claimed_revision = serializers.IntegerField()
    admitted_at = serializers.DateTimeField()
    actor = serializers.CharField()
    valid = serializers.BooleanField()
    fresh = serializers.BooleanField()


class StartReceiptOut(serializers.Serializer):
    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    run_revision = serializers.IntegerField()
    request_digest = serializers.CharField()
    started_at = serializers.DateTimeField()
    digest = serializers.CharField()
    valid = serializers.BooleanField()


class LatestAdmissionOut(AdmissionReceiptOut):
    start = StartReceiptOut(allow_null=True)


class ClaimedOut(serializers.Serializer):
    """A claim or start: receipts; only a fresh grant of execution carries the pause and its input."""

    run_id = serializers.UUIDField()
    run_revision = serializers.IntegerField()
    run_state = serializers.CharField()
    admission = AdmissionReceiptOut(required=False)
    start = StartReceiptOut(required=False)
    fresh = serializers.BooleanField()
    suspension = SuspensionOut(required=False)
    results = serializers.ListField(child=serializers.JSONField(), required=False)
    input = serializers.CharField(required=False)


class DeniedOut(serializers.Serializer):
    decision = serializers.CharField()
    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    run_state = serializers.CharField()
    run_revision = serializers.IntegerField()
    reason = serializers.CharField()
    fresh = serializers.BooleanField()


class ExpiryReceiptOut(serializers.Serializer):
    """Proof that a pause, or an admitted continuation, expired before execution started (T9)."""

    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    scope = serializers.CharField()
    request_digest = serializers.CharField(help_text="The admission's request digest; empty if nothing was admitted.")
    run_revision = serializers.IntegerField()
    expired_at = serializers.DateTimeField()
    event_id = serializers.IntegerField(allow_null=True)
    digest = serializers.CharField()
    valid = serializers.BooleanField(help_text="The digest recomputed from what is stored matches.")


class ClosureReceiptOut(serializers.Serializer):
    """Proof that an uncertain start was closed as incomplete by an operator (T10)."""

    id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    scope = serializers.CharField()
    request = serializers.DictField(help_text="The closure request as retained, with scope and actor.")
    request_digest = serializers.CharField()
    run_revision = serializers.IntegerField()
    event_id = serializers.IntegerField(allow_null=True)
    actor = serializers.CharField()
    closed_at = serializers.DateTimeField()
    digest = serializers.CharField()
    valid = serializers.BooleanField()
    fresh = serializers.BooleanField()


class ParkedWaitOut(serializers.Serializer):
    """A parked flow wait: embed `correlation_id` in the dispatch; the bus resumes with it."""

    correlation_id = serializers.CharField()
    store_key = serializers.CharField()
    user_id = serializers.CharField()
    scope = serializers.CharField()
    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    run_revision = serializers.IntegerField()
    reason = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)


class AskedCallOut(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    arguments = serializers.CharField(help_text="The arguments as the model wrote them: a string holding JSON.")


class ApprovalOut(serializers.Serializer):
    """One approval, pending or decided, with what was asked."""

    suspension_id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    scope = serializers.CharField()
    agent_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "approved", "denied", "expired", "cancelled"])
    calls = AskedCallOut(many=True, help_text="The tool calls that were asked, kept after the pause is gone.")
    requested_by = serializers.CharField(help_text="The principal that stored the pause.")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    decided_by = serializers.CharField(help_text="Empty while pending and when nobody answered.")
    note = serializers.CharField(help_text="The approver's note, or the reason of a denial.")
    resolved_at = serializers.DateTimeField(allow_null=True)
    admission_id = serializers.UUIDField(allow_null=True, help_text="The admission an approval created.")
    run_state = serializers.CharField(allow_null=True)
    version = VersionOut(allow_null=True, help_text="The claim version to decide with; null once decided.")


# -- webhooks (DESIGN §14) --------------------------------------------------------------------


class WebhookEndpointOut(serializers.Serializer):
    """A webhook endpoint; its secrets are never shown after the answer that created them."""

    id = serializers.UUIDField()
    scope = serializers.CharField()
    url = serializers.CharField()
    event_types = serializers.ListField(child=serializers.CharField(), help_text="Empty: every type.")
    format = serializers.ChoiceField(choices=WebhookFormat.choices)
    active = serializers.BooleanField()
    disabled_reason = serializers.CharField(help_text="Who or what disabled it (an operator, a 410 Gone).")
    description = serializers.CharField()
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    previous_secret_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="Until then the secret before the last rotation signs too."
    )


class WebhookEndpointSecretOut(WebhookEndpointOut):
    secret = serializers.CharField(help_text="The signing secret `whsec_<base64>`: shown in this answer only.")


class DeliveryAttemptOut(serializers.Serializer):
    number = serializers.IntegerField()
    at = serializers.DateTimeField()
    status_code = serializers.IntegerField(allow_null=True, help_text="The receiver's status; null when none came.")
    error = serializers.CharField(help_text="Why the attempt failed without a status (timeout, refused address).")
    duration_ms = serializers.IntegerField()


class WebhookMessageOut(serializers.Serializer):
    """One event for one endpoint; `id` is the `webhook-id` header on every attempt."""

    id = serializers.UUIDField()
    endpoint_id = serializers.UUIDField()
    event_id = serializers.IntegerField()
    run_id = serializers.UUIDField(allow_null=True)
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "delivered", "failed"])
    attempt_count = serializers.IntegerField()
    next_attempt_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)
    body = serializers.CharField(help_text="The exact body sent on every attempt.")
    attempts = DeliveryAttemptOut(many=True)
