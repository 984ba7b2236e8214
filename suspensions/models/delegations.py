"""Delegation (docs/identity.md, "Delegation"): while someone is away, another person decides for them.

A delegation holds from `starts_at` to `ends_at` unless ended before; while it holds, what would notify `from_user`
in its scope's subtree notifies `to_user`, and `to_user` may decide as `acting_for` `from_user` there.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from ..ids import uuid7
from .base import Scoped


class Delegation(Scoped):
    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    from_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="delegations_given", db_index=False
    )
    to_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="delegations_held", db_index=False
    )
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    reason = models.TextField(blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    # Ended before ends_at, by whom: the delegator, the delegate or an operator.
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.CharField(max_length=200, blank=True)
    # When the delegate was told the delegation started (at creation, or by the sweep for one starting later).
    notified_at = models.DateTimeField(null=True, blank=True)

    class Meta(Scoped.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="delegation_ends_after_start"),
            models.CheckConstraint(condition=~Q(from_user=F("to_user")), name="delegation_to_another_person"),
        ]
        indexes = [
            *Scoped.Meta.indexes,
            # The decide path's lookup (services/delegations.acting): the delegate's delegations still to end.
            models.Index(fields=["to_user", "ends_at"], name="delegation_held", condition=Q(ended_at__isnull=True)),
            models.Index(fields=["from_user", "ends_at"], name="delegation_given", condition=Q(ended_at__isnull=True)),
            # The sweep's scan for delegations that started and whose delegate was not told yet.
            models.Index(fields=["starts_at"], name="delegation_unannounced", condition=Q(notified_at__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"delegation {self.from_user_id} -> {self.to_user_id} in {self.scope}"
