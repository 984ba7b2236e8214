"""Issue 18: machine instructions per request, counted by Valgrind (callgrind), for one or two checkouts.

CPU time on this shared 2-core machine moves with whatever else runs (an
A/A run of bench/cpu.py reads up to ±20%); the number of instructions a
request executes does not. Each checkout runs in its own Python process
under `valgrind --tool=callgrind`, in-process (bench/cpu.py's `Round`, its
requests sent to the WSGI application as gunicorn sends them: the same
middleware, views and pool checkout, no server), with collection zeroed
before and dumped after each phase of N requests, after a warm-up pass.
Figures: instructions per request of each kind, and each kind over the
floor; with `--baseline DIR`, this checkout over that one (its own code in
a database of its own, migrated by that code, as bench/cpu.py does;
measured with this checkout's bench/cpu.py copied into its bench/ when it
lacks `wsgi_local`). Only this process's user-space instructions count: the
kernel's, PostgreSQL's and gunicorn's own request handling do not, so the
ratios to the floor read higher than bench/cpu.py's (the same extra cost
over a smaller base), and a change's ratio is exact to a few in ten
thousand (ids and clocks differ between runs).

    .venv/bin/python bench/instructions.py [--requests 40] [--baseline DIR]

Needs Debian's `valgrind` (apt-get install valgrind); about a minute a checkout.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

KINDS = ["floor", "pause", "resume", "roundtrip"]


def measure(root: Path, requests: int, database: str | None = None) -> dict[str, int]:
    """Instructions per request of each kind for the checkout at `root` (a child process under callgrind).

    `database`: the bench database it uses, when not this checkout's (a baseline's own, bench/cpu.py).
    """
    env = {**os.environ, **({"BENCH_DATABASE_URL": database} if database else {})}
    with tempfile.TemporaryDirectory() as directory:
        command = ["valgrind", "--tool=callgrind", "--cache-sim=no", "--branch-sim=no"]
        command += [sys.executable, str(Path(__file__).resolve()), "--child", str(root), str(requests)]
        subprocess.run(
            command, cwd=directory, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        out: dict[str, int] = {}
        for dump in Path(directory).glob("callgrind.out.*.*"):
            text = dump.read_text(errors="replace")
            trigger = next(line for line in text.splitlines() if line.startswith("desc: Trigger"))
            kind, sent = trigger.rsplit(" ", 1)[1].split("-")
            total = int(next(line for line in text.splitlines() if line.startswith("summary:")).split()[1])
            out[kind] = total // int(sent)
    return out


def child(root: Path, requests: int) -> None:
    """Under callgrind: warm up, then each kind's N requests between a zero and a dump of the counters."""
    sys.path[:0] = [str(root / "bench"), str(root)]
    os.chdir(root)
    import common
    import cpu

    common.setup_django()
    common.reset_tables()
    secret = common.make_token(cpu.SCOPE, ["engine", "approver"], "bench-cpu")
    import floor_app  # noqa: F401 (the bench URLconf: the floor endpoint)

    local = cpu.wsgi_local(secret)
    from suspensions.services import outbox

    # The wake-ups' daemon thread (services/wakeups.py) sends on its own clock; code before it had none.
    wakeups = getattr(outbox, "WAKEUPS", None)
    flush = wakeups.flush if wakeups is not None else lambda: None

    def control(*args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(os.getpid())], check=True, stdout=subprocess.DEVNULL)

    for number in range(2):  # the first pass warms up (imports, caches, prepared statements)
        work = cpu.Round(requests)
        for kind in KINDS:
            count = requests // 4 if kind == "roundtrip" else requests
            if number:
                control("-z")
            sent = sum(getattr(work, kind)(local, i) for i in range(count))
            flush()  # the phase's own fan-out wake-ups are counted in it, not in the next phase
            if number:
                control("-d", f"{kind}-{sent}")


def main() -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import common

    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=40, help="requests of each kind (a round trip is 4)")
    p.add_argument("--baseline", type=Path, help="another checkout to count side by side (the code before)")
    args = p.parse_args()
    common.setup_django()  # the bench database's guard (its name must end in "bench")
    counts = {"": measure(common.ROOT, args.requests)}
    if args.baseline is not None:
        import cpu

        # The code before a schema change gets a database of its own, migrated by its own code (as in bench/cpu.py).
        before, _ = cpu.baseline_database(args.baseline.resolve(), common.bench_database_url())
        counts["before"] = measure(args.baseline.resolve(), args.requests, before)
    rows = []
    for kind in KINDS:
        now = counts[""][kind]
        row = [kind, f"{now:,}", f"{now / counts[''][KINDS[0]]:.2f}"]
        if args.baseline is not None:
            before = counts["before"][kind]
            row += [f"{before:,}", f"{before / counts['before'][KINDS[0]]:.2f}", f"{now / before:.3f}"]
        rows.append(row)
    headers = ["kind", "instructions/request", "over the floor"]
    if args.baseline is not None:
        headers += ["before", "before over its floor", "now / before"]
    title = f"### Instructions per request (callgrind, in-process, {args.requests} requests of each kind)"
    data = {"machine": common.machine(), "args": {**vars(args), "baseline": str(args.baseline or "")}, "counts": counts}
    common.write_result("instructions", data, "\n".join([title, "", common.table(headers, rows)]))
    return data


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
