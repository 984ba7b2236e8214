"""Approval floors (issue 32 item 5): per-scope minimums an approval pause cannot go below."""

from django.db import models
from django.db.models import Q

from ..ids import uuid7
from .base import Scoped


class ApprovalFloor(Scoped):
    """The least an approval pause in this scope, or any scope below it, must ask for (docs/policies.md, "Floors").

    Its fields are the policy's own words: `quorum` is the fewest approvers,
    `exclude_requester` on means separation of duties always applies,
    `on_expiry` lists the values a pause may use, and `require_linked_person`
    lets only principals of a known person (a user, or a token linked to one)
    decide. Every floor on a pause's scope path applies, field by field, the
    strictest value winning (suspensions/floors.py). One floor per scope.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    quorum = models.PositiveSmallIntegerField(default=1)
    exclude_requester = models.BooleanField(default=True)
    # The on_expiry values allowed, a subset of OnExpiry's in their order; every value by default.
    on_expiry = models.JSONField(default=list)
    require_linked_person = models.BooleanField(default=False)
    # An approval pause here must carry an escalation chain (docs/policies.md, "Escalation chains").
    require_escalation = models.BooleanField(default=False)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    updated_by = models.CharField(max_length=200)
    updated_at = models.DateTimeField()

    class Meta(Scoped.Meta):
        constraints = [
            models.UniqueConstraint(fields=["scope"], name="one_approval_floor_per_scope"),
            models.CheckConstraint(condition=Q(quorum__gte=1, quorum__lte=5), name="approval_floor_quorum_1_to_5"),
        ]

    def __str__(self) -> str:
        return f"approval floor of {self.scope}"
