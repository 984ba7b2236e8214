"""`make bench`: install bench/requirements.txt, then run every bench module, each in its own process.

Modules run in this order (the inbox last: it loads a million rows), then any
other bench/*.py script (bench/sweep.py runs whenever it is present) except the
soak and the scale bench, which run only when named (`bench/run_all.py scale`).
Each writes bench/results/latest/<module>.json and .md; its output also goes
to <module>.log there. Extra arguments for one module go in the environment,
e.g. BENCH_ARGS_contention="--pauses 200".

    .venv/bin/python bench/run_all.py [module ...]
"""

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ORDER = ["resume", "versus_peers", "cpu", "contention", "replays", "sweep", "push", "inbox"]
HELPERS = {
    "common",
    "run_all",
    "private_pg",
    "push_harness",
    "push_statements",
    "soak_chart",
    "soak_checks",
    "soak_report",
    "soak_watch",
    "floor_app",
}
# Run only when named: the soak holds the machine for its --minutes (docs/benchmarks.md, "Soak"), and the scale bench
# fills 10 million events in a PostgreSQL of its own (docs/benchmarks.md, "Scale").
ON_DEMAND = {"soak", "scale"}


def modules(selected: list[str]) -> list[str]:
    present = sorted(p.stem for p in HERE.glob("*.py") if p.stem not in HELPERS)
    ordered = [m for m in ORDER if m in present] + [m for m in present if m not in ORDER]
    return [m for m in ordered if m in selected] if selected else [m for m in ordered if m not in ON_DEMAND]


def install() -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "-r", str(HERE / "requirements.txt")], check=True, cwd=ROOT
    )


def main() -> int:
    selected = sys.argv[1:]
    install()
    sys.path.insert(0, str(HERE))
    import common

    out = common.out_dir()
    env = {**os.environ, "BENCH_DATABASE_URL": common.bench_database_url(), "BENCH_OUT_DIR": str(out)}
    failed = []
    for name in modules(selected):
        extra = shlex.split(os.environ.get(f"BENCH_ARGS_{name}", ""))
        started = time.monotonic()
        print(f"== {name} {' '.join(extra)}", flush=True)
        with open(out / f"{name}.log", "w") as log:
            process = subprocess.Popen(
                [sys.executable, str(HERE / f"{name}.py"), *extra],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                sys.stdout.write(line)
            code = process.wait()
        print(f"== {name}: exit {code} in {time.monotonic() - started:.0f} s", flush=True)
        if code:
            failed.append(name)
    print(f"\nResults went to {out} (<module>.json, <module>.md, <module>.log); docs/benchmarks.md quotes them.")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
