"""Between rounds the benches do what autovacuum would have done (bench/common.py, `between_rounds`).

This machine's PostgreSQL runs with autovacuum off. Without a stand-in, a
bench's tables are never analyzed and never vacuumed, and the statements the
service prepares keep the plans made for empty tables: its PostgreSQL CPU per
cycle then grew round after round while R1's did not (docs/benchmarks.md).
"""

from typing import Any

import pytest
from common import autovacuum_off, between_rounds, connect

from tests.factories import RunFactory
from tests.processes import database_url


def analyzed(pg: Any, table: str) -> Any:
    return pg.execute(
        "SELECT last_analyze, last_vacuum FROM pg_stat_user_tables WHERE relname = %s",
        [table],
    ).fetchone()


@pytest.mark.django_db(transaction=True)  # VACUUM runs outside a transaction, on its own connection
def test_between_rounds_vacuums_and_analyzes_the_app_s_tables_when_autovacuum_is_off() -> None:
    RunFactory.create_batch(3)
    with connect(database_url(), autocommit=True) as pg:
        before = analyzed(pg, "suspensions_run")
        off = autovacuum_off(pg)
        assert between_rounds(database_url(), 1) is off
        after = analyzed(pg, "suspensions_run")
        if off:
            assert None not in after and after[0] != before[0] and after[1] != before[1]
        else:
            assert after == before  # autovacuum keeps them; the bench leaves it alone
