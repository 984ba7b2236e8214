"""Fan-out wake-ups, coalesced (services/wakeups.py): the ids a process commits within a window go in one task."""

import base64
import json
import os
import threading

import pytest
from redis import Redis

from suspensions import services
from suspensions.models import OutboxEvent
from suspensions.services import outbox
from suspensions.services.wakeups import Coalescer
from tests.factories import principal
from tests.processes import wait_for

from .test_outbox import paused, version


class Sends:
    """A send that records what it was given, and from which thread."""

    def __init__(self, fail_first: int = 0) -> None:
        self.sent: list[list[int]] = []
        self.threads: list[str] = []
        self.fail_first = fail_first

    def __call__(self, ids: list[int]) -> None:
        if self.fail_first:
            self.fail_first -= 1
            raise ConnectionError("broker down")
        self.sent.append(ids)
        self.threads.append(threading.current_thread().name)


def test_the_first_ids_after_a_quiet_window_leave_at_once_from_the_wakeup_thread():
    sends = Sends()
    wakeups = Coalescer(sends, lambda: 60, chunk=200)  # a window no test waits out
    wakeups.add([1, 2])
    wait_for(lambda: sends.sent, "the first wake-up", seconds=10)
    assert (sends.sent, sends.threads) == ([[1, 2]], ["fan-out-wakeups"])


def test_ids_added_by_many_threads_within_the_window_leave_together_at_its_end():
    sends = Sends()
    wakeups = Coalescer(sends, lambda: 0.5, chunk=200)
    wakeups.flush()  # a send just ended: the window is running
    threads = [threading.Thread(target=wakeups.add, args=([n * 10, n * 10 + 1],)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_for(lambda: sends.sent, "the window to end")
    assert len(sends.sent) == 1 and sorted(sends.sent[0]) == sorted(n * 10 + k for n in range(8) for k in (0, 1))
    assert sends.threads == ["fan-out-wakeups"]


def test_without_a_window_the_ids_leave_at_once_in_the_adding_thread():
    sends = Sends()
    Coalescer(sends, lambda: 0, chunk=200).add([7, 8])
    assert (sends.sent, sends.threads) == ([[7, 8]], [threading.current_thread().name])


def test_more_ids_than_a_fan_out_holds_go_in_several_tasks_of_at_most_the_chunk():
    sends = Sends()
    wakeups = Coalescer(sends, lambda: 60, chunk=200)
    wakeups.add(list(range(450)))
    wakeups.flush()
    assert [len(ids) for ids in sends.sent] == [200, 200, 50] and sum(sends.sent, []) == list(range(450))


def test_a_failed_send_is_logged_and_the_next_ones_still_leave(caplog):
    sends = Sends(fail_first=1)
    wakeups = Coalescer(sends, lambda: 60, chunk=200)
    wakeups.add([1])
    wakeups.flush()  # raises nothing: the rows are the beat's
    wakeups.add([2])
    wakeups.flush()
    assert sends.sent == [[2]]
    assert "fan-out wake-up not sent" in caplog.text


def test_a_forked_child_sends_its_own_wakeups_from_its_own_thread():
    read, write = os.pipe()
    sent = threading.Event()

    def send(ids):
        os.write(write, json.dumps([os.getpid(), threading.current_thread().name, ids]).encode() + b"\n")
        sent.set()

    wakeups = Coalescer(send, lambda: 0.05, chunk=200)
    wakeups.add([1])  # the parent's thread starts and sends
    assert sent.wait(10)
    sent.clear()
    pid = os.fork()
    if pid == 0:  # the child: its parent's thread does not run here
        try:
            wakeups.add([2])
            sent.wait(10)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    os.close(write)
    with os.fdopen(read) as lines:
        got = [json.loads(line) for line in lines]
    assert [(who == pid, thread, ids) for who, thread, ids in got] == [
        (False, "fan-out-wakeups", [1]),
        (True, "fan-out-wakeups", [2]),
    ]


@pytest.mark.django_db(transaction=True)
def test_committed_transitions_reach_the_broker_as_one_fan_out_task(settings):
    """The real path: two commits inside one window, one task on the `fanout` queue of the real Redis."""
    settings.FAN_OUT_WINDOW_MS = 60_000
    broker = Redis.from_url(settings.CELERY_BROKER_URL)
    outbox.WAKEUPS.flush()  # the window starts now
    broker.delete("fanout")
    s = paused()
    services.approve(principal=principal("user:alice"), suspension_id=s.id, version=version(s))
    assert broker.llen("fanout") == 0  # committed, waiting for the window's end
    outbox.WAKEUPS.flush()
    ids = list(OutboxEvent.objects.order_by("id").values_list("id", flat=True))
    assert len(ids) == 3 and broker.llen("fanout") == 1
    message = json.loads(broker.lpop("fanout"))
    args, _, _ = json.loads(base64.b64decode(message["body"]))
    assert message["headers"]["task"] == outbox.FAN_OUT_TASK and args == [ids]
