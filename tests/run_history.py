"""A run with a rich history, built through the services, for the admin run page's tests (unit and browser)."""

from datetime import timedelta
from typing import Any

from django.utils import timezone

from suspensions import services
from suspensions.models import Admission, DeliveryAttempt, OutboxEvent, Run, WebhookMessage
from suspensions.principals import Principal
from suspensions.services import webhooks

from .closure_setup import ENGINE, claim_version, paused, paused_again
from .helpers import call

ALICE = Principal(name="user:alice", grants=(("acme", frozenset({"approver"})),))
BOB = Principal(name="user:bob", grants=(("acme", frozenset({"approver"})),))
OPS = Principal(name="user:olga", grants=(("acme", frozenset({"operator"})),))
# Engine-supplied text an auditor must see escaped, never run.
ARGUMENTS = '{"to": "IBAN DE89 3704", "amount": 900, "memo": "<script>alert(1)</script>"}'


def paused_for_approval(scope: str = "acme/payments", quorum: int = 2) -> Any:
    pending = [call("c1", "wire_transfer", ARGUMENTS), call("c2", "notify_customer", '{"channel": "email"}')]
    return paused("approval", scope, agent_id="payments-agent", pending=pending, approval={"quorum": quorum})


def rich_run(scope: str = "acme/payments") -> Run:
    """Paused for an approval with quorum 2, voted by two approvers, started, then paused again for a tool.

    Each outbox event got a webhook message (the fan-out task's work, written
    here directly), one delivered after two attempts.
    """
    first = paused_for_approval(scope)
    version = claim_version(first)
    services.approve(principal=ALICE, suspension_id=first.id, version=version, note="looks right")
    services.approve(principal=BOB, suspension_id=first.id, version=version, note="ok <b>bold</b>")
    admission = Admission.objects.get(suspension_id=first.id)
    claimed = services.start_admission(principal=ENGINE, admission_id=admission.id)
    paused_again(claimed)
    messages_for(claimed.run.id, scope)
    return Run.objects.get(pk=claimed.run.id)


def messages_for(run_id: Any, scope: str) -> None:
    endpoint, _ = webhooks.create_endpoint(
        principal=OPS, scope="acme", url="https://hooks.example.com/suspensions/receiver", event_types=[]
    )
    now = timezone.now()
    for n, event in enumerate(OutboxEvent.objects.filter(run_id=run_id).order_by("id")):
        message = WebhookMessage(
            endpoint=endpoint,
            event_id=event.id,
            run_id=run_id,
            type=event.type,
            body=f'{{"type": "{event.type}", "n": {n}}}',
            status="delivered" if n == 0 else "pending",
            attempts=2 if n == 0 else 0,
            next_attempt_at=now,
            created_at=now + timedelta(microseconds=n),
            delivered_at=now if n == 0 else None,
        )
        message.stamp_scope(scope)
        message.save(force_insert=True)
        if n == 0:
            DeliveryAttempt.objects.create(message=message, number=1, at=now, status_code=500, error="HTTP 500")
            DeliveryAttempt.objects.create(message=message, number=2, at=now, status_code=200)
