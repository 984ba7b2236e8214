"""Idempotency keys on creates (DESIGN §22): take a key, keep the answer, forget it after 24 hours.

The HTTP side is suspensions/api/idempotency.py. `take` and `keep` run in the
keyed request's own transaction, around the view: the key row is inserted
first, so a second request with the same key waits on the unique index for
the first one to end, then replays its answer (after a commit) or goes ahead
itself (after a rollback: a refusal keeps nothing).
"""

from dataclasses import dataclass
from datetime import timedelta

from ..clock import db_now
from ..exceptions import IdempotencyMismatch
from ..models import IdempotencyKey
from ..principals import Principal
from .sql import idempotency as sql

# How long a key answers with its first answer; the sweep deletes keys past it.
LIFETIME = timedelta(hours=24)


@dataclass(frozen=True)
class Answer:
    """The first answer to a keyed request: what a replay sends again."""

    status: int
    body: str


def owner_of(principal: Principal) -> str:
    """Whose keys these are: a user and the tokens linked to it are one owner; an unlinked token is its own."""
    if principal.user_id is not None:
        return f"user#{principal.user_id}"
    if principal.token_id is not None:
        return f"token#{principal.token_id}"
    return principal.name


def take(*, principal: Principal, key: str, request_digest: str, method_path: str) -> Answer | None:
    """Hold `key` for this request; None: it is ours now, answer and `keep` the answer. Inside a transaction.

    Waits while another transaction holds the same key. A key taken by an
    identical request answers its first Answer; by another request (another
    body, path or method): IdempotencyMismatch, and nothing is written.
    """
    row = IdempotencyKey(principal=owner_of(principal), key=key, request_digest=request_digest, method_path=method_path)
    for _ in range(2):  # a key deleted by the sweep between the INSERT and the read is taken on the second turn
        if sql.take(row, LIFETIME):
            return None
        held = IdempotencyKey.objects.filter(principal=row.principal, key=key).first()
        if held is None:
            continue
        if held.request_digest != request_digest:
            raise IdempotencyMismatch(
                f"this Idempotency-Key was first sent with another request ({held.method_path}, another body "
                "or path); use a new key for a new request",
                first_request=held.method_path,
            )
        assert held.status is not None, "a committed key always holds its answer"
        return Answer(status=held.status, body=held.body)
    raise AssertionError("an idempotency key neither free nor held")  # pragma: no cover


def keep(*, principal: Principal, key: str, status: int, body: str) -> None:
    """Record the answer of the request that took `key` (same transaction as `take`)."""
    IdempotencyKey.objects.filter(principal=owner_of(principal), key=key).update(status=status, body=body)


def forget_expired() -> int:
    """Delete keys past their lifetime (beat, services via tasks.forget_idempotency_keys): how many were."""
    deleted, _ = IdempotencyKey.objects.filter(created_at__lte=db_now() - LIFETIME).delete()
    return deleted
