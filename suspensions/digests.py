"""Canonical JSON, SHA-256 digests and the input bound (DESIGN §5). Pure functions."""

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from django.conf import settings


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


def rfc3339(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    # isoformat, not strftime("%Y"): glibc writes year 1 as "1", and RFC 3339 needs four digits.
    return moment.astimezone(UTC).isoformat(timespec="microseconds").removesuffix("+00:00") + "Z"


def encoded_size(value: Any) -> int:
    """The byte length of `value` as canonical JSON: what DESIGN §5 bounds."""
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
    return digest(
        {
            "id": str(id),
            "run_id": str(run_id),
            "scope": scope,
            "reason": reason,
            "pending": pending,
            "continuation": continuation,
            "expires_at": rfc3339(expires_at),
        }
    )


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
