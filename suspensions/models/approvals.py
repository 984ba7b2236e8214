"""The approval record opened with an `approval` pause, its policy, and its votes (docs/api.md, "3. Who may do what";
docs/policies.md)."""

import json
from datetime import datetime
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from ..ids import uuid7
from .base import Scoped


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    # The approver answered in words instead of running the tools (`respond`: docs/policies.md, "Responding in words").
    RESPONDED = "responded"


class OnExpiry(models.TextChoices):
    """What the sweep does with a pending approval at its deadline
    (docs/policies.md, "What happens at the deadline")."""

    EXPIRE = "expire"
    DENY = "deny"
    ESCALATE = "escalate"


class Approval(Scoped):
    """The approval request opened with an `approval` pause, and how it was resolved."""

    suspension_id = models.UUIDField(primary_key=True)
    run_id = models.UUIDField(db_index=True)
    # What was asked, kept with the record: the pause is deleted by a deny or a
    # start, and an auditor must still see which calls were decided for which agent.
    agent_id = models.CharField(max_length=200, blank=True)
    pending = models.TextField(blank=True)
    # The pause's tags (its run's, then its own), kept like the calls after the pause is gone.
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    requested_by = models.CharField(max_length=200, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING)
    decided_by = models.CharField(max_length=200, blank=True)
    # The person a delegate decided for (docs/identity.md, "Delegation"): `user:<username>`; empty otherwise.
    acting_for = models.CharField(max_length=200, blank=True, default="")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    # The one reminder to approvers once 80% of the time to the deadline has passed (docs/notifications.md, "Email").
    reminded_at = models.DateTimeField(null=True, blank=True)
    # When 80% of its window (created_at to expires_at) has passed: from then on a pending approval is at risk
    # (docs/console.md; the inbox, the dashboard and the metrics mark it). Moves with the deadline; null: no deadline.
    at_risk_at = models.DateTimeField(null=True, blank=True)
    # The policy (docs/policies.md); a pause without one gets these defaults, which behave as a plain approval
    # (docs/api.md, "3. Who may do what").
    quorum = models.PositiveSmallIntegerField(default=1)
    exclude_requester = models.BooleanField(default=False)
    # The user behind the principal that stored the pause (a user, or a token linked to one).
    requester_user_id = models.IntegerField(null=True, blank=True)
    on_expiry = models.CharField(max_length=16, choices=OnExpiry.choices, default=OnExpiry.EXPIRE)
    extend_seconds = models.PositiveIntegerField(null=True, blank=True)
    # What the scope's approval floors added (suspensions/floors.py): only tokens linked to a person may
    # decide, and the scopes of the floors that covered the pause (comma-joined; empty: none did).
    require_linked_person = models.BooleanField(default=False)
    floor_scopes = models.CharField(max_length=800, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    # An escalation chain (docs/policies.md, "Escalation chains"): its steps as validated
    # (`[{after_seconds, notify: {scopes, groups, people}}]`), how many the sweep has run, and when the next one is
    # due (created_at + its after_seconds; null when none is left).
    # Canonical JSON text, as `pending` (the claim path reads this row as plain columns); "" without a chain.
    escalation = models.TextField(blank=True)
    escalation_step = models.PositiveSmallIntegerField(default=0)
    next_escalation_at = models.DateTimeField(null=True, blank=True)
    # What was decided: the calls as admitted (final arguments, `edited`, the original's
    # digest) or the approver's answer in words. `pending` keeps what was asked.
    final_calls = models.TextField(blank=True)
    response = models.TextField(blank=True)

    class Meta(Scoped.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(quorum__gte=1, quorum__lte=5), name="approval_quorum_1_to_5"),
            models.CheckConstraint(condition=Q(on_expiry__in=OnExpiry.values), name="approval_on_expiry_valid"),
        ]
        indexes = [
            *Scoped.Meta.indexes,
            # The sweep's scan for escalation steps now due: only pending approvals with a step left.
            models.Index(
                fields=["next_escalation_at"],
                name="approval_escalation_due",
                condition=Q(next_escalation_at__isnull=False, status="pending"),
            ),
            # The at-risk gauge and filter: pending approvals by the moment 80% of their window passed.
            models.Index(
                fields=["at_risk_at"], name="approval_at_risk", condition=Q(at_risk_at__isnull=False, status="pending")
            ),
        ]

    @staticmethod
    def at_risk_from(created_at: datetime, expires_at: datetime | None) -> datetime | None:
        """The moment 80% of the window from `created_at` to `expires_at` has passed; None without a deadline."""
        return created_at + (expires_at - created_at) * 4 / 5 if expires_at is not None else None

    @property
    def policy(self) -> dict[str, object]:
        """The policy as the API shows it (docs/policies.md)."""
        on_expiry: object = self.on_expiry
        if self.on_expiry == OnExpiry.ESCALATE:
            on_expiry = {"escalate": {"extend_seconds": self.extend_seconds}}
        policy = {"quorum": self.quorum, "exclude_requester": self.exclude_requester, "on_expiry": on_expiry}
        if self.escalation:  # shown only when the pause has a chain: a plain approval reads as before
            policy["escalation"] = self.chain
        return policy

    @property
    def chain(self) -> list[dict[str, Any]]:
        """The escalation chain's steps, `[{after_seconds, notify: {scopes, groups, people}}]`; [] without one."""
        steps = json.loads(self.escalation) if self.escalation else []
        return steps if isinstance(steps, list) else []

    @property
    def floor(self) -> dict[str, object] | None:
        """The approval floors that covered the pause, as the API shows them; None when no floor did."""
        if not self.floor_scopes:
            return None
        return {"scopes": self.floor_scopes.split(","), "require_linked_person": self.require_linked_person}

    def __str__(self) -> str:
        return f"approval {self.suspension_id} ({self.status})"


class ApprovalVote(Scoped):
    """One approver's approve on a quorum approval (docs/policies.md, "Quorum and separation of duties"): distinct
    voters, one row each.

    `voter_key` is who voted for the distinctness rule: the user behind the
    principal when there is one (a user and a token linked to that user are
    one voter), else the principal's name. `calls` is the final calls the vote
    approves, as canonical JSON; later votes must approve exactly the first's.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    suspension_id = models.UUIDField()
    run_id = models.UUIDField(db_index=True)
    voter = models.CharField(max_length=200)
    voter_key = models.CharField(max_length=200)
    # A delegate's vote for someone (docs/identity.md, "Delegation"): `voter` is the delegate, `voter_key` and this
    # name the person represented, so a person and their delegate count once.
    acting_for = models.CharField(max_length=200, blank=True, default="")
    calls = models.TextField()
    note = models.TextField(blank=True)
    # Over the calls and the note: the same voter's identical vote again is a replay.
    digest = models.CharField(max_length=64)
    cast_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [
            models.UniqueConstraint(fields=["suspension_id", "voter_key"], name="one_vote_per_voter"),
        ]

    def __str__(self) -> str:
        return f"vote of {self.voter} on {self.suspension_id}"
