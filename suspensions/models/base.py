"""The choices and the scoped base every table shares."""

from django.db import models

from .. import scopes


class Reason(models.TextChoices):
    APPROVAL = "approval"
    EXTERNAL_TOOL = "external_tool"
    AGENT_REPLY = "agent_reply"


class RunState(models.TextChoices):
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    INCOMPLETE = "incomplete"


TERMINAL_STATES = frozenset(
    {RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED, RunState.EXPIRED, RunState.INCOMPLETE}
)


class Role(models.TextChoices):
    ENGINE = "engine"
    BUS = "bus"
    APPROVER = "approver"
    AUDITOR = "auditor"
    OPERATOR = "operator"


class Scoped(models.Model):
    """A row stamped with a scope at creation; the prefix columns make visibility an equality."""

    scope = models.CharField(max_length=192)
    scope_l1 = models.CharField(max_length=64, db_index=True, editable=False)
    scope_l2 = models.CharField(max_length=128, db_index=True, editable=False, blank=True)
    scope_l3 = models.CharField(max_length=192, db_index=True, editable=False, blank=True)

    class Meta:
        abstract = True

    def stamp_scope(self, scope: str) -> None:
        self.scope = scope
        for name, value in scopes.levels(scope).items():
            setattr(self, name, value)
