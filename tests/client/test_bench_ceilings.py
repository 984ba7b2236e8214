"""How far S-http could go against R1 if serving HTTP cost nothing (bench/resume.py, `ceilings`).

The bench measures each HTTP phase's CPU per cycle (the bench process, the
web workers, PostgreSQL) and the application's own CPU per cycle in-process
(S-app, F-app). The ceiling spends the cores an HTTP phase kept busy on the
in-process cost instead of the workers': the figure docs/performance.md uses
to say whether any server could meet S-http / R1 >= 0.5.
"""

from typing import Any

from resume import ceilings


def phase(cycles: float = 0.0, bench: float = 0.0, web: float = 0.0, postgres: float = 0.0) -> dict[str, Any]:
    return {
        "cycles_per_s": cycles,
        "bench_cpu_ms_per_cycle": bench,
        "web_cpu_ms_per_cycle": web,
        "postgres_cpu_ms_per_cycle": postgres,
    }


def test_the_ceiling_spends_the_busy_cores_on_the_in_process_cost() -> None:
    phases = {
        # 300 cycles/s x (0.5 + 4.0 + 1.5) ms = 1.8 cores busy; in-process the cycle costs 2.0 + 0.5 + 1.5 = 4 ms,
        # so those cores carry 450 cycles/s: 0.45 of R1's 1000. Round two: 200 x 4.0 = 0.8 cores over
        # (1.5 + 0.5 + 1.0) = 3 ms is 266.7 cycles/s, 0.27 of R1's 1000.
        "S-http@8": [phase(300, 0.5, 4.0, 1.5), phase(200, 0.5, 2.5, 1.0)],
        "S-app@1": [phase(bench=2.0), phase(bench=1.5)],
        "R1@8": [phase(1000), phase(1000)],
    }
    assert ceilings(phases, 8) == {"S-http@8 with a server that cost nothing / R1@8": "0.36 (0.27-0.45)"}


def test_a_way_without_its_in_process_phase_has_no_ceiling() -> None:
    phases = {
        "S-http@8": [phase(300, 0.5, 4.0, 1.5)],
        "F-http@8": [phase(600, 0.3, 2.2, 0.5)],
        "F-app@1": [phase(bench=1.6)],
        "R1@8": [phase(1000)],
    }
    # F: 600 x 3.0 = 1.8 cores over (1.6 + 0.3 + 0.5) = 2.4 ms is 750 cycles/s, 0.75 of R1; S has no S-app.
    assert ceilings(phases, 8) == {"F-http@8 with a server that cost nothing / R1@8": "0.75 (0.75-0.75)"}
    assert ceilings(phases, 32) == {}
