"""Response shapes, for the OpenAPI schema.

presenters.py renders them; tests/api/test_shapes.py holds both to the same fields.
"""

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from .. import presenters
from ..models import NotificationChannel, WebhookFormat


class RunOut(serializers.Serializer):
    id = serializers.UUIDField()
    scope = serializers.CharField()
    agent_id = serializers.CharField()
    session_id = serializers.CharField()
    state = serializers.CharField()
    revision = serializers.IntegerField()
    error = serializers.CharField()
    last_reason = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField(), help_text="The tags given at register.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    suspension_id = serializers.SerializerMethodField()

    def get_suspension_id(self, run: Any) -> str | None:
        return getattr(run, "live_suspension_id", None)

    def to_representation(self, run: Any) -> dict[str, Any]:
        """presenters.run_body: the one renderer of a run (the fields above document it)."""
        return presenters.run_body(run)


class EventOut(serializers.Serializer):
    id = serializers.IntegerField()
    run_id = serializers.UUIDField()
    scope = serializers.CharField()
    kind = serializers.CharField()
    actor = serializers.CharField()
    revision = serializers.IntegerField()
    data = serializers.JSONField()  # type: ignore[assignment]
    at = serializers.DateTimeField()
    prev_hash = serializers.CharField(help_text="The hash of the run's previous event; 64 zeros for its first.")
    hash = serializers.CharField(
        help_text="SHA-256 (lowercase hex) over prev_hash, a newline and the canonical JSON of "
        "{id, run_id, scope, kind, actor, revision, data, at}: the run's audit chain."
    )


class AuditPublicKeyOut(serializers.Serializer):
    algorithm = serializers.CharField(help_text="Always `ed25519`.")
    public_key = serializers.CharField(help_text="Base64 of the key's 32 raw bytes.")
    encoding = serializers.CharField()
    signs = serializers.CharField(help_text="What each signature covers.")


class AuditEventLine(EventOut):
    """An event line of the export: `type` is `event`; `at` always has microseconds, as the hash covers it."""

    type = serializers.ChoiceField(choices=["event"])


class AuditCheckpointLine(serializers.Serializer):
    type = serializers.ChoiceField(choices=["checkpoint"])
    workspace = serializers.CharField(
        help_text='The chain it belongs to: a workspace, each with its own; "" for the legacy chain (docs/auditors.md).'
    )
    seq = serializers.IntegerField(help_text="Its number in its workspace's chain: 1, 2, 3...")
    at = serializers.CharField(help_text="RFC 3339 UTC with microseconds, as signed.")
    previous = serializers.CharField(
        help_text="The root of checkpoint seq - 1 of the same workspace; 64 zeros for the first."
    )
    signature = serializers.CharField(help_text="Ed25519, base64, over the signed text (docs/auditors.md).")
    algorithm = serializers.ChoiceField(choices=["ed25519"])
    runs = serializers.ListField(
        child=serializers.ListField(),
        help_text="[run_id, head_hash, event_count] of each exported run the checkpoint sealed.",
    )
    complete = serializers.BooleanField(help_text="True when `runs` holds every line: the root can be recomputed.")

    def get_fields(self) -> dict[str, serializers.Field]:
        # `root` is a serializer's own attribute (the outermost serializer): the field is added here instead.
        fields = super().get_fields()
        fields["root"] = serializers.CharField(help_text="SHA-256 over `previous`, a newline and the lines.")
        return fields


AuditLine = PolymorphicProxySerializer(
    component_name="AuditLine",
    serializers=[AuditEventLine, AuditCheckpointLine],
    resource_type_field_name=None,
)


class PendingCallOut(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    arguments = serializers.CharField(help_text="A string holding JSON, byte for byte as given; not an object.")
    reply_with = serializers.CharField(required=False, help_text="Only on the one call of an `agent_reply` pause.")
    arguments_schema = serializers.JSONField(required=False, help_text="Approval pauses: as given (docs/policies.md).")
    editable = serializers.BooleanField(required=False, help_text="Approval pauses: as given (docs/policies.md).")


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
    tags = serializers.ListField(child=serializers.CharField(), help_text="The run's tags, then the pause's own.")


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
    engine_version = serializers.CharField(allow_null=True, help_text="The engine's version when it paused, if given.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="The run's tags, then the pause's own.")
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


class PausedOut(SuspensionOut):
    """The answer to a pause: the pause, its callback URL when asked, the resume its early results completed."""

    callback_url = serializers.CharField(
        required=False, help_text="With `callback: true`: POST the one-shot resume body here, with no token."
    )
    resume = ClaimedOut(
        required=False,
        help_text="When early results answered every pending call: the one-shot resume's own answer; the run is "
        "where that resume left it (the pause's own `run_revision` and `run_state` are as it was stored).",
    )


class EarlyOut(serializers.Serializer):
    """A kept early result (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause")."""

    run_id = serializers.UUIDField()
    call_id = serializers.CharField()
    digest = serializers.CharField(help_text="SHA-256 of the canonical JSON of `{run_id, call_id, content}`.")
    expires_at = serializers.DateTimeField()
    fresh = serializers.BooleanField(help_text="False when this was the same result again.")
    resume = ClaimedOut(
        required=False,
        help_text="When this was the last result a live pause waited for: the one-shot resume's own answer.",
    )


class DecisionHeadOut(serializers.Serializer):
    """What a denial and a vote answer alike."""

    decision = serializers.CharField()
    run_id = serializers.UUIDField()
    suspension_id = serializers.UUIDField()
    run_state = serializers.CharField()
    run_revision = serializers.IntegerField()
    fresh = serializers.BooleanField(help_text="False when this was the same approver's identical decision again.")


class DeniedOut(DecisionHeadOut):
    reason = serializers.CharField()


class VotedOut(DecisionHeadOut):
    """A vote short of the approval's quorum (202): recorded; the run still waits at the same revision."""

    votes = serializers.IntegerField(help_text="Distinct approvers who approved so far.")
    quorum = serializers.IntegerField(help_text="Votes needed to admit the run.")
    voters = serializers.ListField(child=serializers.CharField())


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
    editable = serializers.BooleanField(help_text="May an approver edit the arguments?")
    arguments_schema = serializers.JSONField(allow_null=True, help_text="JSON Schema the edited arguments must match.")


class FinalCallOut(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    arguments = serializers.CharField(help_text="The arguments the run was admitted with: a string holding JSON.")
    edited = serializers.BooleanField()
    original_digest = serializers.CharField(help_text="SHA-256 (hex) of the arguments as asked, UTF-8 bytes.")


class PolicyOut(serializers.Serializer):
    quorum = serializers.IntegerField()
    exclude_requester = serializers.BooleanField()
    on_expiry = serializers.JSONField(help_text='"expire", "deny", or {"escalate": {"extend_seconds": n}}.')
    escalation = serializers.ListField(
        child=serializers.JSONField(),
        required=False,
        help_text="The escalation chain's steps `{after_seconds, notify: {scopes, groups, people}}`, when the pause "
        "has one.",
    )


class FloorAppliedOut(serializers.Serializer):
    scopes = serializers.ListField(
        child=serializers.CharField(), help_text="The scopes of the approval floors that covered the pause, top first."
    )
    require_linked_person = serializers.BooleanField(
        help_text="Only a principal of a person (a user, or a token linked to one) may decide."
    )


class VoteOut(serializers.Serializer):
    voter = serializers.CharField()
    cast_at = serializers.DateTimeField()
    note = serializers.CharField()


class ApprovalOut(serializers.Serializer):
    """One approval, pending or decided, with what was asked."""

    suspension_id = serializers.UUIDField()
    run_id = serializers.UUIDField()
    scope = serializers.CharField()
    agent_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["pending", "approved", "denied", "responded", "expired", "cancelled"])
    calls = AskedCallOut(many=True, help_text="The tool calls that were asked, kept after the pause is gone.")
    policy = PolicyOut(help_text="The policy in force: as asked, raised to the scope's approval floors.")
    floor = FloorAppliedOut(allow_null=True, help_text="The approval floors that covered the pause; null if none.")
    votes = VoteOut(many=True, help_text="Approve votes so far, in order.")
    final_calls = FinalCallOut(many=True, allow_null=True, help_text="Approved: the calls as admitted.")
    response = serializers.CharField(allow_null=True, help_text="Responded: the approver's answer in words.")
    escalated_at = serializers.DateTimeField(allow_null=True, help_text="When the deadline was moved by escalation.")
    requested_by = serializers.CharField(help_text="The principal that stored the pause.")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    decided_by = serializers.CharField(help_text="Empty while pending and when nobody answered.")
    note = serializers.CharField(help_text="The approver's note, or the reason of a denial.")
    resolved_at = serializers.DateTimeField(allow_null=True)
    admission_id = serializers.UUIDField(allow_null=True, help_text="The admission an approval created.")
    run_state = serializers.CharField(allow_null=True)
    version = VersionOut(allow_null=True, help_text="The claim version to decide with; null once decided.")
    tags = serializers.ListField(
        child=serializers.CharField(),
        help_text="The pause's tags (its run's, then its own), kept after the pause is gone.",
    )


# -- webhooks (docs/api.md, "7.8 Webhooks") ---------------------------------------------------


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
    secret = serializers.CharField(
        allow_null=True,
        help_text="The signing secret `whsec_<base64>`: shown in this answer only. Null only in a replay (same "
        "Idempotency-Key) after the secret was rotated out; `secret_withheld` then says so.",
    )
    secret_withheld = serializers.CharField(
        required=False, help_text="Only in a replay whose secret no longer signs: why `secret` is null."
    )


# -- notification routes (docs/notifications.md, "Routes") ------------------------------------


class NotificationRouteOut(serializers.Serializer):
    """Where a scope's approval events are also told: an email address or a Slack channel."""

    id = serializers.UUIDField()
    scope = serializers.CharField()
    kind = serializers.ChoiceField(choices=NotificationChannel.choices)
    target = serializers.CharField(help_text="An email address, or a Slack channel id.")
    event_types = serializers.ListField(child=serializers.CharField(), help_text="Empty: every approval event.")
    active = serializers.BooleanField()
    description = serializers.CharField()
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()


# -- approval floors (issue 32, docs/policies.md "Floors") -------------------------------------


class ApprovalFloorOut(serializers.Serializer):
    """The least an approval pause in `scope`, or below it, must ask for."""

    id = serializers.UUIDField()
    scope = serializers.CharField()
    quorum = serializers.IntegerField(help_text="The fewest distinct approvers, 1 to 5.")
    exclude_requester = serializers.BooleanField(help_text="Separation of duties always applies.")
    on_expiry = serializers.ListField(
        child=serializers.ChoiceField(choices=["expire", "deny", "escalate"]),
        help_text="The on_expiry values a pause may use.",
    )
    require_linked_person = serializers.BooleanField(
        help_text="Only a principal of a person (a user, or a token linked to one) may decide."
    )
    require_escalation = serializers.BooleanField(help_text="An approval pause must carry an escalation chain.")
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_by = serializers.CharField()
    updated_at = serializers.DateTimeField()


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


# -- errors (docs/api.md, "6. Error codes") ---------------------------------------------------


class Problem(serializers.Serializer):
    """Every error, as application/problem+json (RFC 9457); suspensions/problems.py renders it."""

    type = serializers.CharField(help_text="`https://suspensions.dev/errors/<code>`; `about:blank` for 405, 406, 429.")
    title = serializers.CharField(help_text="The code's fixed title.")
    status = serializers.IntegerField(help_text="The HTTP status; the same code always has the same status.")
    detail = serializers.CharField(help_text="What went wrong in this request.")
    code = serializers.CharField(help_text="The stable error code (docs/api.md §6); branch on this.")
    # The metaclass moves declared fields off the class: this does not shadow Serializer.errors.
    errors = serializers.JSONField(  # type: ignore[assignment]
        required=False,
        help_text="`invalid_request`: the field errors, keyed by field; `arguments_invalid`: a list of "
        "`{call_id, path, message}`.",
    )
    call_id = serializers.CharField(required=False, help_text="`not_editable`: the call that may not be edited.")
    request_digest = serializers.CharField(
        required=False, help_text="`admission_conflict`, `closure_conflict`: the digest of your request."
    )
    admitted_digest = serializers.CharField(
        required=False, help_text="`admission_conflict`: the digest of the request that claimed the pause."
    )
    closed_digest = serializers.CharField(
        required=False, help_text="`closure_conflict`: the digest of the request that closed the run."
    )
    receipt = StartReceiptOut(required=False, help_text="`resume_already_started`: the start receipt.")
    engine_version = serializers.CharField(required=False, help_text="`version_drift`: the version you sent.")
    pause_engine_version = serializers.CharField(
        required=False, help_text="`version_drift`: the version the pause was stored with."
    )
    version = VersionOut(required=False, help_text="`version_conflict` of a closure: the version to close.")
    unknown = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="`results_mismatch`: call ids no pending call has."
    )
    missing = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="`results_mismatch`: pending call ids without a result.",
    )
