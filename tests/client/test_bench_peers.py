"""The arithmetic of bench/versus_peers.py: ratios taken inside each round, rates as median (min-max).

The bench itself is not run here (it holds the machine for minutes); these
are the pure functions its tables are made of.
"""

from versus_peers import peer_ratios, rate_spread, ratios_of_round, round_rows, rounds_of


def phases(**rates: list[float]) -> dict[str, list[dict[str, float]]]:
    """`way_at_clients=[rate per round]` as the bench records it (`S_http_8` is "S-http@8")."""
    out = {}
    for key, values in rates.items():
        way, clients = key.rsplit("_", 1)
        out[f"{way.replace('_', '-')}@{clients}"] = [{"round_trips_per_s": v} for v in values]
    return out


def test_a_round_gives_the_service_over_each_peer() -> None:
    ratios = ratios_of_round({"S-http": 150.0, "LG-in": 100.0, "DBOS-in": 50.0, "R1": 400.0})
    assert ratios == {"S-http / LG-in": 1.5, "S-http / DBOS-in": 3.0}


def test_a_peer_that_did_not_run_or_made_nothing_has_no_ratio() -> None:
    assert ratios_of_round({"S-http": 150.0, "LG-in": 0.0}) == {}
    assert ratios_of_round({"S-http": 150.0, "DBOS-in": 60.0}) == {"S-http / DBOS-in": 2.5}
    assert ratios_of_round({"LG-in": 30.0, "S-in": 60.0}) == {}  # --ways without the service over HTTP


def test_rates_read_as_median_and_range_with_one_decimal() -> None:
    assert rate_spread([3.0, 1.04, 2.0]) == "2.0 (1.0-3.0)"
    assert rate_spread([10.0, 1.0, 2.0, 3.0]) == "2.5 (1.0-10.0)"


def test_ratios_are_taken_inside_each_round_then_their_median() -> None:
    # Per round 2.0 and 1.0; the medians of the rates would give 200 / 175 = 1.14 instead.
    ratios = peer_ratios(phases(S_http_8=[100.0, 300.0], LG_in_8=[50.0, 300.0], DBOS_in_8=[25.0, 100.0]))
    assert ratios == {"S-http@8 / LG-in@8": "1.50 (1.00-2.00)", "S-http@8 / DBOS-in@8": "3.50 (3.00-4.00)"}


def test_one_peer_over_the_other_is_not_a_service_ratio() -> None:
    ratios = peer_ratios(phases(S_in_1=[90.0], LG_in_1=[45.0], DBOS_in_1=[30.0]))
    assert ratios == {"S-in@1 / LG-in@1": "2.00 (2.00-2.00)", "S-in@1 / DBOS-in@1": "3.00 (3.00-3.00)"}


def test_round_rows_hold_each_rate_and_the_service_ratios_of_that_round() -> None:
    recorded = phases(S_http_8=[120.0, 90.0], LG_in_8=[100.0, 100.0], DBOS_in_8=[40.0, 45.0], S_http_1=[20.0])
    ways = ["S-http", "LG-in", "DBOS-in"]
    assert round_rows(rounds_of(recorded, 8, ways), ways) == [
        [1, 120.0, 100.0, 40.0, "1.20", "3.00"],
        [2, 90.0, 100.0, 45.0, "0.90", "2.00"],
    ]
    # At one client only the service ran: its rate, and no ratio.
    assert round_rows(rounds_of(recorded, 1, ways), ways) == [[1, 20.0, "-", "-", "-", "-"]]


def test_the_counting_proxy_counts_a_begin_with_options_as_a_begin() -> None:
    from common import CountingProxy

    proxy = CountingProxy("127.0.0.1", 9)  # never connected to: only its reading of messages is tested
    try:
        for text in (b"BEGIN ISOLATION LEVEL READ COMMITTED", b"BEGIN", b"COMMIT", b"SELECT 1", b";"):
            proxy._count(b"Q", text + b"\x00", False)
        assert proxy.snapshot() == {"round_trips": 5, "statements": 1, "commits": 1, "begins": 2, "checks": 1}
    finally:
        proxy.close()
