"""Approver emails survive the database dropping every connection (issue 33): each is sent, none twice.

A real Celery worker (with its beat) delivers the notifications to Django's
file mail backend; while a burst of approvals is stored, every other backend
of the test database is terminated three times (the worker's pool, its
fan-outs and deliveries, mid-flight). Before, the emails of a fan-out that
died were lost for good (63 in the soak); now they are rows, and the rows
are delivered at least once, their outcomes recorded across a reconnect.
"""

import email
import threading
import time
from pathlib import Path

import pytest
from django.db import connection, connections

from suspensions.models import MessageStatus, Notification
from suspensions.notify import NOTIFICATION_HEADER
from tests.helpers import member
from tests.processes import wait_for

from .conftest import paused

pytestmark = pytest.mark.slow

APPROVALS = 24
APPROVERS = ("alice", "bob", "carol")
TERMINATIONS = 3


def terminate_others(spared: int) -> int:
    """pg_terminate_backend of every other backend of the test database but `spared` (the burst's); how many."""
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s",
            [spared],
        )
        return int(cursor.fetchone()[0])


def terminator(spared: int, killed: list[int], done: threading.Event) -> None:
    try:
        for _ in range(TERMINATIONS):
            time.sleep(1.0)
            killed.append(terminate_others(spared))
    finally:
        connection.close()
        done.set()


def sent_mails(folder: Path) -> list[tuple[str, str]]:
    """(notification id, recipient) of every message the file backend wrote (several per file possible)."""
    found = []
    for path in sorted(folder.glob("*.log")):
        # The file backend separates messages with a line of 79 dashes.
        for raw in path.read_text().split("\n" + "-" * 79 + "\n"):
            if raw.strip():
                message = email.message_from_string(raw.strip("\n"))
                found.append((message[NOTIFICATION_HEADER], message["To"]))
    return found


def test_every_approver_email_is_sent_once_though_every_connection_is_terminated_during_the_burst(worker, tmp_path):
    mail = tmp_path / "mail"
    mail.mkdir()
    for name in APPROVERS:
        member(name, {"acme": ["approver"]}, is_staff=True, email=f"{name}@example.com")
    worker(EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend", EMAIL_FILE_PATH=str(mail))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        burst_pid = cursor.fetchone()[0]
    killed: list[int] = []
    done = threading.Event()
    thread = threading.Thread(target=terminator, args=(burst_pid, killed, done))
    thread.start()
    approvals = []
    while len(approvals) < APPROVALS or not done.is_set():
        approvals.append(paused().id)
    thread.join()
    assert len(killed) == TERMINATIONS and sum(killed) > 0, killed

    expected = len(approvals) * len(APPROVERS)
    wait_for(
        lambda: Notification.objects.filter(status=MessageStatus.DELIVERED).count() == expected,
        f"{expected} approver emails delivered",
        seconds=120,
        step=0.2,
    )
    sent = sent_mails(mail)
    ids = {str(i) for i in Notification.objects.values_list("id", flat=True)}
    assert len(sent) == expected, "an email was sent twice" if len(sent) > expected else "an email is missing"
    assert {i for i, _ in sent} == ids
    assert sorted(to for _, to in sent) == sorted(f"{n}@example.com" for n in APPROVERS for _ in approvals)
    assert set(Notification.objects.values_list("approval_id", flat=True)) == set(approvals)
