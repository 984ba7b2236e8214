"""Release racers together: real threads, each on its own database connection."""

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import connection

T = TypeVar("T")


def race(racers: int, rounds: Sequence[T], act: Callable[[int, T], Any]) -> list[list[Any]]:
    """Every racer calls act(racer, round) for each round in turn, all released together per round.

    Returns answers[round_index][racer]. Each thread closes its connection when done,
    so the test database can be dropped afterwards.
    """
    barrier = threading.Barrier(racers, timeout=60)
    answers: list[list[Any]] = [[None] * racers for _ in rounds]

    def racer(n: int) -> None:
        try:
            for i, item in enumerate(rounds):
                barrier.wait()
                answers[i][n] = act(n, item)
        finally:
            connection.close()

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers
