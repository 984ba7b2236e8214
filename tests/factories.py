"""Rows built straight into the database, for tests about a service rather than about HTTP.

Each factory stamps the scope like the services do (`Scoped.stamp_scope`), so
the selectors see its rows; the continuation and pending calls are valid
JSON text, as a suspend would have stored them.
"""

from datetime import timedelta
from typing import Any

import factory
from django.utils import timezone

from suspensions import digests
from suspensions.models import Approval, Reason, Run, RunState, Suspension
from suspensions.principals import Principal
from suspensions.services.claims import FAR_FUTURE
from tests.helpers import call, continuation


class ScopedFactory(factory.django.DjangoModelFactory):
    class Meta:
        abstract = True

    scope = "acme"

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> Any:
        scope = kwargs.pop("scope")
        row = model_class(*args, **kwargs)
        row.stamp_scope(scope)
        row.save(force_insert=True)
        return row


class RunFactory(ScopedFactory):
    class Meta:
        model = Run

    agent_id = factory.Sequence(lambda n: f"agent-{n}")
    state = RunState.RUNNING
    revision = 1
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyAttribute(lambda o: o.created_at)


class PausedRunFactory(RunFactory):
    state = RunState.PAUSED
    revision = 2
    last_reason = Reason.EXTERNAL_TOOL


class SuspensionFactory(ScopedFactory):
    """A live pause; give `run=` a paused run of the same scope, or one is made."""

    class Meta:
        model = Suspension

    class Params:
        ttl = timedelta(hours=1)
        calls = factory.LazyFunction(lambda: [call()])

    run = factory.SubFactory(PausedRunFactory, scope=factory.SelfAttribute("..scope"))
    reason = Reason.EXTERNAL_TOOL
    pending = factory.LazyAttribute(lambda o: digests.canonical(o.calls).decode())
    continuation = factory.LazyFunction(lambda: digests.canonical(continuation()).decode())
    tool_names = factory.LazyAttribute(lambda o: "," + ",".join(c["name"] for c in o.calls) + ",")
    created_at = factory.LazyFunction(timezone.now)
    expires_at = factory.LazyAttribute(lambda o: o.created_at + o.ttl if o.ttl else None)
    deadline = factory.LazyAttribute(lambda o: o.expires_at or FAR_FUTURE)


class ApprovalPauseFactory(SuspensionFactory):
    """An approval pause with its pending approval request, as a suspend opens it."""

    reason = Reason.APPROVAL

    class Meta:
        skip_postgeneration_save = True  # the hook writes its own row; the pause needs no second save

    @factory.post_generation
    def request(obj: Suspension, create: bool, extracted: Any, **kwargs: Any) -> None:  # noqa: N805
        approval = Approval(
            suspension_id=obj.id,
            run_id=obj.run_id,
            agent_id=obj.run.agent_id,
            pending=obj.pending,
            requested_by="token:engine",
            expires_at=obj.expires_at,
            created_at=obj.created_at,
        )
        approval.stamp_scope(obj.scope)
        approval.save(force_insert=True)


def principal(name: str = "token:engine", scope: str = "acme", *roles: str) -> Principal:
    """A principal holding `roles` (default: every role) in `scope`, without a token row."""
    granted = frozenset(roles or ("engine", "bus", "approver", "auditor", "operator"))
    return Principal(name=name, grants=((scope, granted),))
