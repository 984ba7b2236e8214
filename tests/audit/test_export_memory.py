"""The export streams in flat memory (docs/api.md, "7.14 Audit"): 200,000 events, and the process barely grows while
they pass."""

import pytest
from django.db import connection

from tests.helpers import client

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
EVENTS = 200_000


def resident_bytes() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def test_exporting_200k_events_keeps_memory_flat(token):
    with connection.cursor() as cursor:  # 200 runs of 1,000 events; only the bytes matter here, not the chain
        cursor.execute(
            "INSERT INTO suspensions_event (run_id, scope, scope_l1, scope_l2, scope_l3, kind, actor, revision, data, "
            "at, prev_hash, hash) SELECT md5((g / 1000)::text)::uuid, 'acme', 'acme', '', '', 'noted', 'bench', 1, "
            "jsonb_build_object('n', g), now(), md5(g::text) || md5(g::text), md5(g::text) || md5(g::text) "
            "FROM generate_series(1, %s) g",
            [EVENTS],
        )
        cursor.execute("ANALYZE suspensions_event")  # as autovacuum would: the export's pages then walk the id index
    response = client(token("acme", ["auditor"], "ann")).get("/api/v1/audit/export")
    assert response.status_code == 200
    lines, streamed, early = 0, 0, 0
    for chunk in response.streaming_content:
        lines += chunk.count(b"\n")
        if early:
            streamed += len(chunk)
        if lines == 20_000:
            early = resident_bytes()
    assert lines == EVENTS
    growth = resident_bytes() - early
    # Held in memory, the last 180,000 lines would cost several times their bytes; streamed, they cost none.
    assert growth < streamed / 10, (growth, streamed)
