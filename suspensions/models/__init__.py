"""The tables. Invariants live here as constraints; state changes live in services/.

Core tables here; the approval record and its votes in approvals.py, push tables in push.py.
"""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import BrinIndex, GinIndex
from django.db import models
from django.db.models import Q

from ..ids import uuid7
from .approvals import Approval, ApprovalStatus, ApprovalVote, OnExpiry
from .base import SCOPE_LEVELS, TERMINAL_STATES, Reason, Role, RunState, Scoped, level_indexes
from .delegations import Delegation
from .floors import ApprovalFloor
from .idempotency import IdempotencyKey
from .identity import MembershipSource, OidcIdentity, RoleChange, RoleChangeKind, RoleMapping
from .notifications import (
    ASKING,
    ENDING,
    ROUTE_EVENT_TYPES,
    WEBHOOK_EVENT_TYPES,
    Notification,
    NotificationChannel,
    NotificationKind,
    NotificationRoute,
)
from .push import (
    OPERATOR_WEBHOOK_FORMATS,
    DeliveryAttempt,
    EventType,
    MessageStatus,
    OutboxEvent,
    WebhookEndpoint,
    WebhookFormat,
    WebhookMessage,
)
from .retention import AuditPrune, LegalHold, PrunedRun
from .scim import ScimGroup, ScimUser
from .slack import SlackChannel, SlackIdentity

__all__ = [
    "ScimGroup",
    "ScimUser",
    "TERMINAL_STATES",
    "Admission",
    "AdmissionSource",
    "AdmissionState",
    "ApiToken",
    "Approval",
    "ApprovalFloor",
    "ApprovalStatus",
    "ApprovalVote",
    "AuditCheckpoint",
    "AuditPrune",
    "AuditRunHead",
    "ClosureReceipt",
    "Delegation",
    "DeliveryAttempt",
    "EarlyResult",
    "EventType",
    "Event",
    "ExpiryReceipt",
    "FlowWait",
    "IdempotencyKey",
    "LegalHold",
    "Membership",
    "MembershipSource",
    "OidcIdentity",
    "RoleChange",
    "RoleChangeKind",
    "RoleMapping",
    "MessageStatus",
    "Notification",
    "NotificationChannel",
    "NotificationKind",
    "ASKING",
    "ENDING",
    "ROUTE_EVENT_TYPES",
    "WEBHOOK_EVENT_TYPES",
    "NotificationRoute",
    "OnExpiry",
    "OutboxEvent",
    "PrunedRun",
    "Reason",
    "Role",
    "Run",
    "RunState",
    "Scoped",
    "SlackChannel",
    "SlackIdentity",
    "Start",
    "Suspension",
    "SweepHeartbeat",
    "WebhookEndpoint",
    "WebhookFormat",
    "OPERATOR_WEBHOOK_FORMATS",
    "WebhookMessage",
]


class Run(Scoped):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    agent_id = models.CharField(max_length=200)
    session_id = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.RUNNING)
    revision = models.BigIntegerField(default=1)
    error = models.TextField(blank=True)
    # The reason of the latest pause, kept after the pause is gone so runs can be
    # filtered by what they waited for.
    last_reason = models.CharField(max_length=16, choices=Reason.choices, blank=True)
    # Set when an early result is kept for this run
    # (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"), never cleared: read with the run
    # lock, it spares a pause of a run that never had one the look-up of its early results.
    has_early_results = models.BooleanField(default=False)
    # The engine's labels (suspensions/tags.py): set at register, never changed.
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(revision__gte=1), name="run_revision_gte_1"),
            models.CheckConstraint(condition=Q(state__in=RunState.values), name="run_state_valid"),
        ]
        indexes = [
            # A scope's runs newest first (the console's and the admin's run lists): each level with the id, so a
            # page of one tenant is read from its own entries (docs/performance.md, "At scale").
            *[models.Index(fields=[level, "id"], name=f"run_{level}_id") for level in SCOPE_LEVELS],
            models.Index(fields=["state", "updated_at"], name="run_state_updated"),
            models.Index(fields=["agent_id"], name="run_agent"),
            # `?tag=` on runs: tags @> ARRAY[...].
            GinIndex(fields=["tags"], name="run_tags"),
        ]

    def __str__(self) -> str:
        return f"run {self.id} ({self.state}, rev {self.revision})"


class Suspension(Scoped):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    # One live pause per run: the unique one-to-one is the invariant.
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="suspension")
    reason = models.CharField(max_length=16, choices=Reason.choices)
    # Pending calls and continuation are kept as the JSON text we validated,
    # never re-serialised on the way out.
    pending = models.TextField()
    continuation = models.TextField()
    # ",name1,name2," so a tool-name filter is a plain containment test on any database.
    tool_names = models.TextField(blank=True)
    # Wide enough for a flow wait's store key (docs/api.md, "7.7 Flow waits (correlation-keyed)"); API pauses send at
    # most 200.
    reply_with = models.CharField(max_length=1100, blank=True)
    correlation_id = models.CharField(max_length=1024, blank=True)
    # The engine's own version when it paused (opaque; empty: not given): the drift guard of a resume or start.
    engine_version = models.CharField(max_length=200, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # The pause's own labels (suspensions/tags.py), beside its run's.
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    # expires_at with "no deadline" as the far future: a non-null sort key for
    # the deadline-ordered inbox and its cursor.
    deadline = models.DateTimeField()
    created_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [models.CheckConstraint(condition=Q(reason__in=Reason.values), name="suspension_reason_valid")]
        indexes = [
            *level_indexes("scope_l3"),  # scope_l1 and scope_l2 lead the inbox's own indexes below
            # The sweep's scan: only rows with a deadline, in deadline order.
            models.Index(fields=["expires_at"], name="suspension_sweep", condition=Q(expires_at__isnull=False)),
            # The approval inbox: one scope's pauses of one reason in deadline order.
            models.Index(fields=["scope_l1", "reason", "deadline", "id"], name="suspension_inbox_l1"),
            models.Index(fields=["scope_l2", "reason", "deadline", "id"], name="suspension_inbox_l2"),
            # A superuser's inbox (no scope filter) and the dashboard's "oldest pending approval".
            models.Index(fields=["reason", "deadline", "id"], name="suspension_inbox_all"),
            models.Index(fields=["reason", "created_at"], name="suspension_oldest"),
            # The bus's lookup of a pending call's reply address.
            models.Index(fields=["reply_with"], name="suspension_reply_with"),
            # `?tag=` on suspensions and approvals: tags @> ARRAY[...].
            GinIndex(fields=["tags"], name="suspension_tags"),
        ]

    def __str__(self) -> str:
        return f"{self.reason} pause {self.id}"


class AdmissionSource(models.TextChoices):
    ONE_SHOT = "one_shot"
    APPROVAL = "approval"
    AGENT_REPLY = "agent_reply"
    DISPATCH = "dispatch"


class AdmissionState(models.TextChoices):
    ADMITTED = "admitted"
    STARTED = "started"
    DONE = "done"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    CLOSED = "closed"


class Admission(Scoped):
    """The atomic claim of one pause, bound to one exact input. Evidence: ids are plain columns."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    run_id = models.UUIDField()  # indexed as the first column of one_admission_per_pause
    suspension_id = models.UUIDField()
    source = models.CharField(max_length=16, choices=AdmissionSource.choices)
    state = models.CharField(max_length=16, choices=AdmissionState.choices, default=AdmissionState.ADMITTED)
    # The encoded JSON input, byte for byte as the caller sent it.
    input = models.TextField()
    request_digest = models.CharField(max_length=64)
    suspension_digest = models.CharField(max_length=64)
    version_revision = models.BigIntegerField()
    claimed_revision = models.BigIntegerField()
    actor = models.CharField(max_length=200)
    admitted_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [
            models.UniqueConstraint(fields=["run_id", "suspension_id"], name="one_admission_per_pause"),
        ]
        indexes = [
            *Scoped.Meta.indexes,
            # The engines' work list: admitted work, oldest first.
            models.Index(fields=["state", "admitted_at"], name="admission_work"),
        ]

    def __str__(self) -> str:
        return f"admission {self.id} ({self.state})"


class Start(Scoped):
    """The single grant to execute an admitted continuation."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    admission_id = models.UUIDField(unique=True)
    run_id = models.UUIDField()  # indexed as the first column of one_start_per_pause
    suspension_id = models.UUIDField()
    run_revision = models.BigIntegerField()
    request_digest = models.CharField(max_length=64)
    digest = models.CharField(max_length=64)
    actor = models.CharField(max_length=200)
    started_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [models.UniqueConstraint(fields=["run_id", "suspension_id"], name="one_start_per_pause")]

    def __str__(self) -> str:
        return f"start {self.id}"


class ExpiryReceipt(Scoped):
    """Proof that an admitted continuation expired before its start."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    run_id = models.UUIDField()  # indexed as the first column of one_expiry_per_pause
    suspension_id = models.UUIDField()
    request_digest = models.CharField(max_length=64)
    run_revision = models.BigIntegerField()
    event_id = models.BigIntegerField(null=True)
    digest = models.CharField(max_length=64)
    expired_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [models.UniqueConstraint(fields=["run_id", "suspension_id"], name="one_expiry_per_pause")]

    def __str__(self) -> str:
        return f"expiry of {self.suspension_id}"


class ClosureReceipt(Scoped):
    """Proof that an uncertain start was closed as incomplete by an operator."""

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    run_id = models.UUIDField()  # indexed as the first column of one_closure_per_pause
    suspension_id = models.UUIDField()
    request = models.TextField()
    request_digest = models.CharField(max_length=64)
    run_revision = models.BigIntegerField()
    event_id = models.BigIntegerField(null=True)
    actor = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    closed_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [models.UniqueConstraint(fields=["run_id", "suspension_id"], name="one_closure_per_pause")]

    def __str__(self) -> str:
        return f"closure of {self.suspension_id}"


class Event(Scoped):
    """Append-only audit row, written in the transaction of the change it records."""

    id = models.BigAutoField(primary_key=True)
    run_id = models.UUIDField()  # indexed as the first column of event_timeline
    kind = models.CharField(max_length=32)
    actor = models.CharField(max_length=200)
    revision = models.BigIntegerField()
    data = models.JSONField(default=dict)
    at = models.DateTimeField()
    # Not a column: the tags its webhooks carry (services/claims.event sets them, services/announce.py reads them).
    announce_tags: tuple[str, ...] = ()
    # The run's hash chain (docs/auditors.md, "What is recorded"; suspensions/audit.py): the previous event's hash (64
    # zeros for the first) and this event's, both computed by the INSERT that writes the row (services/sql/rows.py).
    prev_hash = models.CharField(max_length=64, editable=False)
    hash = models.CharField(max_length=64, editable=False)

    class Meta(Scoped.Meta):
        indexes = [
            # A scope's events in id order (the audit export's pages, a scoped admin list): each level with the id, so
            # a page of one tenant is read from its own index entries, not by walking every tenant's events in id
            # order (docs/performance.md, "At scale").
            *[models.Index(fields=[level, "id"], name=f"event_{level}_id") for level in SCOPE_LEVELS],
            models.Index(fields=["run_id", "id"], name="event_timeline"),
            # The checkpoint's "runs with events since" (services/audit.py): `at` grows with the table's
            # physical order, so a BRIN index serves the range at almost no cost to each INSERT.
            BrinIndex(fields=["at"], name="event_at_brin"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} r{self.revision}"


class EarlyResult(Scoped):
    """A tool result that came before the pause waiting for it
    (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause"): kept until used or its ttl ends.

    `suspension_id` is set when a resume used it (the row stays, so the same
    result again is a replay); the sweep deletes every row past `expires_at`.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    run_id = models.UUIDField()
    call_id = models.CharField(max_length=200)
    # The result's content as canonical JSON text.
    content = models.TextField()
    digest = models.CharField(max_length=64)
    suspension_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [models.UniqueConstraint(fields=["run_id", "call_id"], name="one_early_result_per_call")]
        # The sweep's delete, in deadline order.
        indexes = [*Scoped.Meta.indexes, models.Index(fields=["expires_at"], name="early_result_sweep")]

    def __str__(self) -> str:
        return f"early result of {self.call_id}"


class AuditCheckpoint(models.Model):
    """A signed seal over the heads of one workspace's run chains that changed since its previous one
    (docs/auditors.md, "What is recorded").

    Each workspace (a scope's first segment, a tenant) has a chain of its own: `seq` 1, 2, 3... per
    `workspace`, `previous` the root of that workspace's checkpoint `seq - 1` (docs/auditors.md). The rows
    written before there was one chain per workspace are the legacy chain, workspace "" (they seal every
    tenant's runs and are signed with the first text; suspensions/audit.py, `signed_text`). `runs` holds the
    covered lines as [run_id, head_hash, event_count]; `root` = SHA-256 of the previous root, a newline and
    those lines; `signature` is Ed25519 over audit.signed_text, base64. Written by the beat task only;
    (workspace, seq) is unique, so two overlapping ticks cannot both write one. `id` only orders the rows
    as written, across workspaces; it is on no wire and in no signature.
    """

    id = models.BigAutoField(primary_key=True)
    workspace = models.CharField(max_length=64, default="", blank=True)
    seq = models.BigIntegerField()
    at = models.DateTimeField()
    previous = models.CharField(max_length=64)
    root = models.CharField(max_length=64)
    runs = models.JSONField(default=list)
    signature = models.CharField(max_length=128)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "seq"], name="one_checkpoint_per_seq")]

    def __str__(self) -> str:
        return f"checkpoint {self.seq} of {self.workspace}" if self.workspace else f"checkpoint {self.seq}"


class AuditRunHead(models.Model):
    """The head and count of a run's chain as last sealed, and by which checkpoint (`seq` in the run's
    workspace's chain, or the legacy one): how the next checkpoint tells which chains changed. A convenience
    for the writer, never trusted by the verifier."""

    run_id = models.UUIDField(primary_key=True)
    head = models.CharField(max_length=64)
    count = models.BigIntegerField()
    seq = models.BigIntegerField()

    def __str__(self) -> str:
        return f"run {self.run_id} sealed at {self.count} events by checkpoint {self.seq}"


class ApiToken(Scoped):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    name = models.CharField(max_length=200)
    roles = models.CharField(max_length=200, help_text="Comma-separated roles.")
    # SHA-256 of the secret; the secret itself is shown once and never stored. Unique by a constraint,
    # not unique=True, which adds a varchar_pattern_ops twin for LIKE: read by equality only, on every request.
    token_hash = models.CharField(max_length=64, editable=False)
    prefix = models.CharField(max_length=16, editable=False)
    revoked = models.BooleanField(default=False)
    # The person this token acts for, if any: for separation of duties a token and its
    # user are one principal (docs/policies.md, "Quorum and separation of duties").
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="api_tokens"
    )
    # Null: never expires. Past it the token is refused like a revoked one.
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta(Scoped.Meta):
        constraints = [models.UniqueConstraint(fields=["token_hash"], name="one_token_per_hash")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def role_set(self) -> frozenset[str]:
        return frozenset(r for r in self.roles.split(",") if r)


class Membership(Scoped):
    # Indexed as the first column of one_membership_per_role.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships", db_index=False
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    # Granted by hand, or given by a provider group's mapping (services/role_mappings.py): a sign-in or a SCIM call
    # rewrites only the provider's rows, so the same role may be held both ways at once.
    source = models.CharField(max_length=8, choices=MembershipSource.choices, default=MembershipSource.HAND)

    class Meta(Scoped.Meta):
        constraints = [
            models.UniqueConstraint(fields=["user", "scope", "role", "source"], name="one_membership_per_role_source")
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.scope}"


class FlowWait(Scoped):
    """A correlation-keyed wait (docs/api.md, "7.7 Flow waits (correlation-keyed)"): finds the run and pause a flow
    parked under a store key.

    Kept after the wait is consumed, so a retried resume finds its admission to
    replay. `live` is cleared by the resume that claims it, or by the next park
    on the same key once the pause is gone (cancelled or expired).
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    store_key = models.CharField(max_length=1100)
    correlation_id = models.CharField(max_length=1024)
    nonce = models.CharField(max_length=32)  # unique: one_wait_per_nonce
    pack = models.CharField(max_length=100)
    flow = models.CharField(max_length=100)
    # HMAC-SHA256 of the decision token's SHA-256 under a server key (suspensions/keys.py); never the token.
    decision_token_hash = models.CharField(max_length=64, blank=True)
    run_id = models.UUIDField()
    suspension_id = models.UUIDField()
    # The revision the park left the run at: the claim version a resume presents.
    run_revision = models.BigIntegerField()
    live = models.BooleanField(default=True)
    created_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [
            models.UniqueConstraint(fields=["nonce"], name="one_wait_per_nonce"),
            # One live wait per key: the second park's insert fails here (already_suspended).
            models.UniqueConstraint(
                fields=["scope", "store_key"], condition=Q(live=True), name="one_live_wait_per_key"
            ),
        ]
        # The resume's lookup of a key, live or consumed.
        indexes = [*Scoped.Meta.indexes, models.Index(fields=["scope", "store_key"], name="flow_wait_key")]

    def __str__(self) -> str:
        return f"flow wait {self.store_key}"


class SweepHeartbeat(models.Model):
    """The last successful sweep: one row (id 1), written by the sweep task, read by /readyz and /metrics.

    A database row because every web process must see what a worker on
    another machine did, and it outlives restarts of either.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    last_success_at = models.DateTimeField()

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="sweep_heartbeat_one_row")]

    def __str__(self) -> str:
        return f"last sweep {self.last_success_at:%Y-%m-%dT%H:%M:%SZ}"


# -- push (docs/api.md, "8. Push: webhooks") --------------------------------------------------
