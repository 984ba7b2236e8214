"""An escalation chain of three steps (docs/policies.md, "Escalation chains") run by the real sweep on Celery beat:
each step's group is asked once, in the chain's order, by email through the notification routes' delivery.

A worker with its beat sweeping every second; one approval whose chain asks a different group at 1, 2 and 3
seconds (its deadline a minute away); Django's file mail backend stands in for the mail server.
"""

import email

import pytest
from django.contrib.auth.models import Group

from suspensions.models import Approval, Event, MessageStatus, Notification
from suspensions.notify import CHAIN_LEAD, NOTIFICATION_HEADER
from tests.helpers import member
from tests.processes import wait_for

from .conftest import paused

pytestmark = pytest.mark.slow

GROUPS = {"first-line": "ann", "leads": "bob", "managers": "cid"}


def mails(folder):
    found = []
    for path in sorted(folder.glob("*.log")):
        for raw in path.read_text().split("\n" + "-" * 79 + "\n"):
            if raw.strip():
                found.append(email.message_from_string(raw.strip("\n")))
    return found


def test_a_chain_of_three_steps_asks_each_group_once_in_order_on_the_beat(worker, tmp_path):
    mail = tmp_path / "mail"
    mail.mkdir()
    for group, name in GROUPS.items():
        user = member(name, {"acme": ["approver"]}, is_staff=True, email=f"{name}@example.com")
        user.groups.add(Group.objects.create(name=group))
    chain = [{"after_seconds": n + 1, "notify": {"groups": [g]}} for n, g in enumerate(GROUPS)]
    s = paused(ttl=60, escalation=chain)
    worker(
        SWEEP_INTERVAL_SECONDS="1",
        EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
        EMAIL_FILE_PATH=str(mail),
    )
    escalations = Notification.objects.filter(approval_id=s.id, kind="escalation")
    wait_for(
        lambda: escalations.filter(status=MessageStatus.DELIVERED).count() == 3,
        "three escalation emails delivered",
        seconds=60,
    )
    steps = Event.objects.filter(run_id=s.run_id, kind="escalated").order_by("id")
    assert [e.data["step"] for e in steps] == [0, 1, 2]
    assert [e.revision for e in steps] == [2, 2, 2]
    assert [(n.step, n.recipient) for n in escalations.order_by("created_at", "step")] == [
        (1, "ann@example.com"),
        (2, "bob@example.com"),
        (3, "cid@example.com"),
    ]
    record = Approval.objects.get(pk=s.id)
    assert (record.status, record.escalation_step, record.next_escalation_at) == ("pending", 3, None)
    sent = [m for m in mails(mail) if m[NOTIFICATION_HEADER] in {str(n.pk) for n in escalations}]
    assert sorted(m["To"] for m in sent) == ["ann@example.com", "bob@example.com", "cid@example.com"]
    assert all(m["Subject"].startswith("Escalated: ") for m in sent)
    assert all(CHAIN_LEAD in m.get_payload()[0].get_payload() for m in sent)
