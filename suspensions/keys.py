"""Secrets at rest (issue 32): webhook signing secrets sealed with Fernet, decision tokens kept as a keyed hash.

The keys are DATA_ENCRYPTION_KEYS (settings): Fernet keys, newest first. The
first seals; every one opens (MultiFernet), so a key is rotated by putting a
new one first, running `manage.py rotate_data_keys` (which seals every
webhook secret again under it), then removing the old one (docs/deploy.md, "Secrets at rest").

A decision token is stored as HMAC-SHA256(key, SHA-256(token)) under the
first key and checked against each: not the unsalted SHA-256 of a value the
caller chose, which anyone holding the table could test guesses against.
Hashing the SHA-256, not the token, let the migration convert the hashes
already stored without knowing a single token.
"""

import functools
import hashlib
import hmac

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from . import digests


@functools.cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.DATA_ENCRYPTION_KEYS))


def seal(text: str) -> str:
    """`text` encrypted and authenticated under the first key ("" stays "": no secret to hide)."""
    return fernet().encrypt(text.encode("utf-8")).decode("ascii") if text else ""


def unseal(token: str) -> str:
    """What `seal` sealed, under any of the keys; a value no key opens is a configuration error, said as such."""
    if not token:
        return ""
    try:
        return fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError):
        raise ImproperlyConfigured(
            "a webhook secret cannot be opened with any of DATA_ENCRYPTION_KEYS: was a key removed too early?"
        ) from None


def reseal(token: str) -> str:
    """`token` sealed again under the first key (a rotation)."""
    return fernet().rotate(token.encode("ascii")).decode("ascii") if token else ""


def _hmac_keys() -> list[bytes]:
    # One HMAC key per Fernet key, derived so that neither reveals the other.
    label = b"suspensions decision token\0"
    return [hashlib.sha256(label + key.encode()).digest() for key in settings.DATA_ENCRYPTION_KEYS]


def keyed(sha256_hex: str, key: bytes | None = None) -> str:
    """HMAC-SHA256 of a token's SHA-256 (hex) under `key` (the first one by default), hex."""
    return hmac.new(key or _hmac_keys()[0], sha256_hex.encode("ascii"), hashlib.sha256).hexdigest()


def decision_token_hash(token: str) -> str:
    """What a flow wait stores of its decision token."""
    return keyed(digests.sha256_hex(token))


def decision_token_matches(token: str, stored: str) -> bool:
    """Whether `token` is the one `stored` was made from, under any key; constant time per key."""
    sha = digests.sha256_hex(token)
    return any(hmac.compare_digest(keyed(sha, key), stored) for key in _hmac_keys())
