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
    # A provider's SCIM client (docs/identity.md, "Provisioning (SCIM) and leavers"): a machine's role.
    PROVISIONER = "provisioner"


SCOPE_LEVELS = tuple(f"scope_l{i}" for i in range(1, scopes.MAX_DEPTH + 1))  # the columns of scopes.levels


def level_indexes(*levels: str) -> list[models.Index]:
    """An index of each scope level named (all three when none is), named <model>_<level>."""
    return [models.Index(fields=[level], name=f"%(class)s_{level}") for level in levels or SCOPE_LEVELS]


class Scoped(models.Model):
    """A row stamped with a scope at creation; the prefix columns make visibility an equality."""

    scope = models.CharField(max_length=192)
    scope_l1 = models.CharField(max_length=64, editable=False)
    scope_l2 = models.CharField(max_length=128, editable=False, blank=True)
    scope_l3 = models.CharField(max_length=192, editable=False, blank=True)

    class Meta:
        abstract = True
        # One index per level, named per table. Declared here, not with db_index: for a CharField with
        # db_index, Django also builds a varchar_pattern_ops index on PostgreSQL, for LIKE, and visibility
        # is only ever an equality (filters.filter_scope, sql.rows). A model with a Meta of its own
        # subclasses this one and lists `*Scoped.Meta.indexes` first, or `*level_indexes(...)` of the levels
        # no index of its own leads with (docs/performance.md, "Where the time goes"; tests/services/test_indexes.py).
        indexes = level_indexes()

    def stamp_scope(self, scope: str) -> None:
        self.scope = scope
        for name, value in scopes.levels(scope).items():
            setattr(self, name, value)
