"""Verify a webhook delivery (Standard Webhooks, docs/api.md §8): the standard library only.

The service signs `{webhook-id}.{webhook-timestamp}.{body}` with HMAC-SHA256,
keyed with the base64-decoded part of the `whsec_` secret, and sends
`v1,<base64 signature>` in `webhook-signature` (several, space-separated,
while a rotated secret still signs).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from .errors import ClientError

SECRET_PREFIX = "whsec_"
TOLERANCE_SECONDS = 300


class WebhookVerificationError(ClientError):
    """The delivery is not proven to come from the service: answer it 401 and do not act on it."""


def verify_webhook(
    headers: Mapping[str, str],
    body: bytes | str,
    secret: str,
    *,
    tolerance: float = TOLERANCE_SECONDS,
    now: float | None = None,
) -> dict[str, Any]:
    """The delivered event `{"type", "timestamp", "data"}`, once its signature and timestamp check out.

    `body` is the raw request body as received (verify before parsing).
    `headers` is any mapping; names are matched without regard to case.
    Raises `WebhookVerificationError` for a missing header, a timestamp more
    than `tolerance` seconds away from `now` (replays), or no matching signature.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    message_id = lowered.get("webhook-id")
    timestamp = lowered.get("webhook-timestamp")
    signatures = lowered.get("webhook-signature")
    if not message_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not Unix seconds") from None
    current = time.time() if now is None else now
    if abs(current - sent_at) > tolerance:
        raise WebhookVerificationError(f"webhook-timestamp is more than {tolerance:g} s from now")
    payload = body.encode() if isinstance(body, str) else body
    expected = sign(secret, message_id, sent_at, payload)
    for entry in signatures.split():
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected.encode()):
            return dict(json.loads(payload))
    raise WebhookVerificationError("no signature matches the secret")


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The base64 HMAC-SHA256 the service sends after `v1,` (for receivers' own tests)."""
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("the secret is not whsec_ followed by base64") from None
    signed = f"{message_id}.{timestamp}.".encode() + body
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
