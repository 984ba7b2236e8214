"""A fresh transition as ONE guarded statement without a transaction around it; else under the run lock.

DESIGN §3 allows a claim as one conditional write. `attempted(body)` reads
the run and its live pause without a lock (`claims_sql.lock_run` sees the
attempt on the connection's batch), runs every check of `body` on what it
read, and sends all of `body`'s writes in one statement, outside any
transaction (so without BEGIN and COMMIT: one statement is its own
transaction), behind a guard that locks the run and finds it still at the
revision and state it was read at (batch.Batch.send_guarded). When the guard
finds it moved, the statement changes nothing. A transition that locks no
run (register) writes only new rows: its one statement needs no guard.

The attempt answers only the transition it wrote. A refusal, a replay (no
write), a moved run, what `lock_answers` hands to the lock, or a statement
it cannot send in its one statement (a second run, a write after a read,
the keys of a second INSERT read back) drop it, unsent, and `body` runs
again in `claims_sql.transition()`, under the run lock, which answers as
before: a fresh transition costs the token, the read and the write; the
rest cost the attempt's read more. Inside a transaction (a test's, or a
caller's), on other databases and with ATTEMPTS off, every transition goes
to the lock at once. docs/decisions.md, "The hot path's SQL", has the why.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import DataError, IntegrityError
from django.db.transaction import TransactionManagementError

from ..exceptions import ServiceError
from ..fixedsql import db
from ..models import Run
from .batch import BATCH, MOVED, Unbatched, attempt_of, batched
from .claims_sql import enabled, q, transition

# Off: every attempted() transition goes straight to the lock (the tests that compare both ways).
ATTEMPTS = True
T = TypeVar("T")


@dataclass
class Attempt:
    """One transition tried without a transaction around it, held by its batch (`batch.attempt_of`).

    `guard`: the run as it was read (key, revision, state). `hooks`: what
    the transition asked to run on commit, kept until its statement has
    succeeded: while the attempt is open, `transaction.on_commit` on the
    connection lands here (the connection's own `on_commit` is shadowed by
    this one's for the attempt), since outside a transaction Django would
    run it at once.
    """

    guard: list[Any] | None = None
    hooks: list[tuple[set[str], Callable[[], Any], bool]] = field(default_factory=list)

    def on_commit(self, func: Callable[[], Any], robust: bool = False) -> None:
        self.hooks.append((set(), func, robust))


@functools.cache
def _guard_sql() -> str:
    """An attempt's guard: the run, locked, still at the revision and state it was read at."""
    run = q(Run._meta.db_table)
    return (
        f"SELECT 1 FROM {run} WHERE {run}.{q('id')} = %s AND {run}.{q('revision')} = %s"
        f" AND {run}.{q('state')} = %s FOR NO KEY UPDATE"
    )


def lock_answers() -> None:
    """What follows (a replay, a 409) is answered under the lock: an attempt open on the connection drops here."""
    if attempt_of(db()) is not None:
        raise Unbatched("an attempt answers a fresh transition only")


def attempted(body: Callable[[], T]) -> T:
    """One transition: `body` tried first as ONE statement without a transaction around it, else under the lock."""
    conn = db()
    if not (ATTEMPTS and enabled()) or conn.in_atomic_block or BATCH in conn.__dict__:
        with transition():
            return body()
    tried = Attempt()
    conn.on_commit = tried.on_commit  # type: ignore[method-assign]  # (see Attempt)
    landed = False
    try:
        with batched(conn, attempt=tried) as batch:
            answer = body()
        if not batch.waiting:
            raise Unbatched("nothing to write: the answer is the lock's")
        batch.send_guarded(_guard_sql() if tried.guard else None, tried.guard or [])
        landed = True
    except (ServiceError, Unbatched, IntegrityError, TransactionManagementError):
        pass
    except DataError as error:
        if MOVED not in str(error):
            raise
    finally:
        del conn.on_commit
    if not landed:
        with transition():
            return body()
    conn.run_on_commit = tried.hooks  # type: ignore[assignment]  # Django runs them: robust ones logged, others raised
    conn.run_and_clear_commit_hooks()
    return answer
