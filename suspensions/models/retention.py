"""Retention of the audit trail (docs/auditors.md, "Retention and legal holds"): legal holds, and the record of
what pruning removed and which signed checkpoint sealed it."""

from django.db import models
from django.db.models import Q

from ..ids import uuid7
from .base import Scoped, level_indexes


class LegalHold(Scoped):
    """Keeps events past AUDIT_RETENTION_DAYS: of every run in `scope` and below it (`run_id` null), or of one run.

    A run's hold carries the run's scope too, so who sees it is decided as for any scoped row; the hold
    itself is on the run only. Released, not deleted: the row stays as the record of the hold.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    run_id = models.UUIDField(null=True, blank=True)
    reason = models.CharField(max_length=500)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    released_by = models.CharField(max_length=200, blank=True, default="")
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta(Scoped.Meta):
        indexes = [
            *level_indexes(),
            # What pruning reads: the holds in force (few rows).
            models.Index(fields=["run_id"], name="legal_hold_active", condition=Q(released_at__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"hold on run {self.run_id}" if self.run_id else f"hold on {self.scope}"


class PrunedRun(models.Model):
    """A run whose first `count` events were pruned; the last of them had hash `head`, and the checkpoint `seq`
    of `workspace` seals the line `run_id head count` (the verifier checks that line, not this row)."""

    run_id = models.UUIDField(primary_key=True)
    count = models.BigIntegerField()
    head = models.CharField(max_length=64)
    workspace = models.CharField(max_length=64)
    seq = models.BigIntegerField()
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"run {self.run_id}: pruned before event {self.count + 1}, sealed by checkpoint {self.seq}"


class AuditPrune(models.Model):
    """One pass of pruning: the months dropped, how many events and runs went, how many runs kept theirs (held, or
    whose chain did not verify: `problems`), and the checkpoints (`[workspace, seq]`) that sealed what went."""

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField()
    before = models.DateTimeField()
    partitions = models.JSONField(default=list)
    events = models.BigIntegerField()
    runs = models.BigIntegerField()
    held_runs = models.BigIntegerField()
    checkpoints = models.JSONField(default=list)
    # The runs kept because their pruned events no longer verify, each with what the walk found: look at them.
    problems = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"pruned {self.events} events before {self.before:%Y-%m-%d}"
