"""Canonical JSON, SHA-256 digests and the input bound (docs/api.md, "5. Digests and bounds"). Pure functions."""

import hashlib
import json
from datetime import UTC, datetime
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator

# Digests on the wire are lowercase hex SHA-256.
HEX_SHA256 = RegexValidator(r"^[0-9a-f]{64}\Z", "Must be a lowercase hex SHA-256 digest.")


def canonical(value: Any) -> bytes:
    """Keys sorted, separators `,` `:`, UTF-8, no ASCII escaping.

    Raises ValueError for text that has no UTF-8 form (lone surrogates).
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text holds an unpaired surrogate") from exc


def digest(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def sha256_hex(text: str) -> str:
    """Lowercase hex SHA-256 of text already encoded as wanted (a token, a retained request)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rfc3339(moment: datetime | None, timespec: str = "microseconds") -> str | None:
    """UTC with a Z; `timespec="auto"` writes microseconds only when there are some (DRF's form)."""
    if moment is None:
        return None
    # isoformat, not strftime("%Y"): glibc writes year 1 as "1", and RFC 3339 needs four digits.
    return moment.astimezone(UTC).isoformat(timespec=timespec).removesuffix("+00:00") + "Z"


def encoded_size(value: Any) -> int:
    """The byte length of `value` as canonical JSON: what the bound of docs/api.md, "5. Digests and bounds" measures."""
    return len(canonical(value))


def within_bound(value: Any) -> bool:
    return encoded_size(value) <= settings.MAX_INPUT_BYTES


def version_dict(run_id: Any, suspension_id: Any, run_revision: int) -> dict[str, Any]:
    return {"run_id": str(run_id), "suspension_id": str(suspension_id), "run_revision": int(run_revision)}


def request_digest(*, scope: str, version: dict[str, Any], input: str) -> str:
    return digest({"scope": scope, "version": version, "input": input})


def suspension_digest(
    *, id: Any, run_id: Any, scope: str, reason: str, pending: Any, continuation: Any, expires_at: datetime | None
) -> str:
    """The digest of the canonical object {id, run_id, scope, reason, pending, continuation, expires_at}."""
    return suspension_digest_of_texts(
        id=id,
        run_id=run_id,
        scope=scope,
        reason=reason,
        pending=canonical(pending),
        continuation=canonical(continuation),
        expires_at=expires_at,
    )


def suspension_digest_of_texts(
    *, id: Any, run_id: Any, scope: str, reason: str, pending: bytes, continuation: bytes, expires_at: datetime | None
) -> str:
    """`suspension_digest` of a pause whose pending calls and continuation are already canonical JSON.

    A pause keeps both as canonical text: this splices them into the
    canonical object (keys in sorted order) instead of parsing and encoding
    them again, which for a continuation of megabytes is most of a claim.
    """
    expires = rfc3339(expires_at)
    h = hashlib.sha256(b'{"continuation":')
    h.update(continuation)
    h.update(b',"expires_at":' + (b"null" if expires is None else _string(expires)))
    h.update(b',"id":' + _string(str(id)))
    h.update(b',"pending":')
    h.update(pending)
    h.update(b',"reason":' + _string(reason))
    h.update(b',"run_id":' + _string(str(run_id)))
    h.update(b',"scope":' + _string(scope) + b"}")
    return h.hexdigest()


def _string(text: str) -> bytes:
    """`canonical(text)` for a str: the JSON string encoder `json.dumps(ensure_ascii=False)` uses, then UTF-8."""
    try:
        return encode_basestring(text).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text holds an unpaired surrogate") from exc


def start_digest(
    *, run_id: Any, suspension_id: Any, run_revision: int, request_digest: str, started_at: datetime
) -> str:
    return digest(
        {
            "run_id": str(run_id),
            "suspension_id": str(suspension_id),
            "run_revision": int(run_revision),
            "request_digest": request_digest,
            "started_at": rfc3339(started_at),
        }
    )


def expiry_digest(
    *, run_id: Any, suspension_id: Any, scope: str, request_digest: str, run_revision: int, expired_at: datetime
) -> str:
    """The digest of an expiry receipt over its fields."""
    return digest(
        {
            "run_id": str(run_id),
            "suspension_id": str(suspension_id),
            "scope": scope,
            "request_digest": request_digest,
            "run_revision": int(run_revision),
            "expired_at": rfc3339(expired_at),
        }
    )


def closure_digest(receipt: Any) -> str:
    """The digest of a closure receipt over its other fields (the request is bound by its own digest)."""
    return digest(
        {
            "id": str(receipt.id),
            "run_id": str(receipt.run_id),
            "suspension_id": str(receipt.suspension_id),
            "scope": receipt.scope,
            "request_digest": receipt.request_digest,
            "run_revision": int(receipt.run_revision),
            "event_id": receipt.event_id,
            "actor": receipt.actor,
            "closed_at": rfc3339(receipt.closed_at),
        }
    )


def utc_or_none(moment: datetime) -> datetime | None:
    """`moment` in UTC, or None when it has no offset or falls outside years 1-9999 there
    (docs/api.md, "5. Digests and bounds")."""
    if moment.utcoffset() is None:
        return None
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        return None
