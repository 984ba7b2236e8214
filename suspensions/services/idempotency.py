"""Idempotency keys on creates (docs/api.md, "4. Claims and recovery"): take a key, keep the answer, forget it after 24
hours.

The HTTP side is suspensions/api/idempotency.py. `take` and `keep` run in the
keyed request's own transaction, around the view: the key row is inserted
first, so a second request with the same key waits on the unique index for
the first one to end, then replays its answer (after a commit) or goes ahead
itself (after a rollback: a refusal keeps nothing).

A principal holds at most IDEMPOTENCY_KEYS_PER_PRINCIPAL keys younger than
24 hours (docs/api.md, §4): a new key past that is `429 throttled` before the
key row is written, while a key already held still replays.
"""

import math
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models.functions import Now

from ..clock import db_now
from ..exceptions import IdempotencyMismatch, Throttled
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
    body, path or method): IdempotencyMismatch, and nothing is written. A new
    key past the principal's allowance: Throttled, and nothing is written.
    """
    row = IdempotencyKey(principal=owner_of(principal), key=key, request_digest=request_digest, method_path=method_path)
    refuse_past_allowance(row.principal, key)
    for _ in range(2):  # a key deleted by the sweep between the INSERT and the read is taken on the second turn
        if sql.take(row, LIFETIME):
            return None
        held = IdempotencyKey.objects.filter(principal=row.principal, key=key).first()
        if held is None or held.status is None:  # swept since; a committed key always holds its answer
            continue
        if held.request_digest != request_digest:
            raise IdempotencyMismatch(
                f"this Idempotency-Key was first sent with another request ({held.method_path}, another body "
                "or path); use a new key for a new request",
                first_request=held.method_path,
            )
        return Answer(status=held.status, body=held.body)
    raise AssertionError("an idempotency key neither free nor held")  # pragma: no cover


def refuse_past_allowance(owner: str, key: str) -> None:
    """Throttled when `owner` already holds its allowance of young keys and `key` is not one of them.

    Concurrent new keys of one owner may each see room and pass together: the
    allowance bounds storage, it is not a fence, so a few over it are harmless.
    """
    allowance = settings.IDEMPOTENCY_KEYS_PER_PRINCIPAL
    young = IdempotencyKey.objects.filter(principal=owner, created_at__gt=Now() - LIFETIME)
    if not young[allowance - 1 :].exists() or young.filter(key=key).exists():
        return
    oldest = young.order_by("created_at").values_list("created_at", flat=True).first()
    wait = (oldest + LIFETIME - db_now()).total_seconds() if oldest is not None else 1
    raise Throttled(
        f"this principal holds {allowance} idempotency keys younger than 24 hours (IDEMPOTENCY_KEYS_PER_PRINCIPAL); "
        "a new key is refused until the oldest one expires",
        retry_after=math.ceil(wait),
    )


def keep(*, principal: Principal, key: str, status: int, body: str) -> None:
    """Record the answer of the request that took `key` (same transaction as `take`)."""
    IdempotencyKey.objects.filter(principal=owner_of(principal), key=key).update(status=status, body=body)


def forget_expired() -> int:
    """Delete keys past their lifetime (beat, services via tasks.forget_idempotency_keys): how many were."""
    deleted, _ = IdempotencyKey.objects.filter(created_at__lte=db_now() - LIFETIME).delete()
    return deleted
