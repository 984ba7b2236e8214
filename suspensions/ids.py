"""Time-ordered UUIDs (the UUIDv7 layout), so ids sort by creation and serve as cursors.

Within one process the ids are strictly increasing, even inside one
millisecond or when the wall clock steps back: the 12 bits after the
timestamp and the 62 random bits count on from the previous id (RFC 9562
§6.2, method 3 "replace the leftmost random bits with an increasing
counter"). Across processes only the millisecond orders them, which is why
nothing that must be exact ("the latest admission of a run") relies on the
id order: see selectors.latest_admission.
"""

import os
import threading
import time
import uuid

_RAND_BITS = 74  # 12 bits of rand_a + 62 bits of rand_b
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _next() -> tuple[int, int]:
    global _last_ms, _last_rand
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms > _last_ms:
            # A fresh millisecond: random bits, but the top one clear, so the
            # counter has room to grow inside this millisecond.
            rand = int.from_bytes(os.urandom(10), "big") & ((1 << (_RAND_BITS - 1)) - 1)
        else:
            # Same millisecond (or the clock stepped back): count on from the last id.
            ms = _last_ms
            rand = _last_rand + 1 + (int.from_bytes(os.urandom(2), "big") & 0xFF)
            if rand >> _RAND_BITS:
                ms, rand = ms + 1, 0  # the counter overflowed: borrow the next millisecond
        _last_ms, _last_rand = ms, rand
    return ms, rand


def uuid7() -> uuid.UUID:
    ms, rand = _next()
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 62) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return uuid.UUID(int=value)
