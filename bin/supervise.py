#!/usr/bin/env python3
"""Run several long-lived commands as one, and stop them all with one Ctrl-C.

`make run` uses it for the web server, the Celery worker and Celery beat:

    python bin/supervise.py web "python manage.py runserver ..." worker "celery ... worker" ...

Arguments come in pairs: a name, then the command (split like a shell would,
without a shell). Each command runs in its own session, so the terminal's
Ctrl-C reaches only make and this script; this script then sends exactly one
SIGTERM to each command (Celery's warm shutdown, runserver's exit), waits up to
STOP_TIMEOUT seconds, and SIGKILLs whatever is left of each process group.
A second Ctrl-C, or one command ending on its own, stops the others the same
way; the exit status is that of the first command that ended, or 0 after a
requested stop. Standard library only: it runs before anything else is set up.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time

STOP_TIMEOUT = float(os.environ.get("SUPERVISE_STOP_TIMEOUT", "20"))
POLL = 0.2


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


def main(argv: list[str]) -> int:
    if not argv or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    requested: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        requested.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    procs: dict[str, subprocess.Popen[bytes]] = {}
    for name, command in zip(argv[::2], argv[1::2], strict=True):
        procs[name] = subprocess.Popen(  # noqa: S603 - our own commands, from the Makefile
            shlex.split(command), start_new_session=True, preexec_fn=_die_with_parent
        )

    status = 0
    ended: str | None = None
    while not requested and ended is None:
        for name, proc in procs.items():
            code = proc.poll()
            if code is not None:
                ended, status = name, code
                break
        else:
            time.sleep(POLL)

    if ended is not None:
        print(f"supervise: {ended} exited with status {status}; stopping the others.", file=sys.stderr, flush=True)
    else:
        print(
            f"supervise: stopping {', '.join(procs)} (a Celery worker's warm shutdown takes a few seconds;"
            " Ctrl-C again kills at once).",
            file=sys.stderr,
            flush=True,
        )
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
            print(f"supervise: {name} did not stop; killing it.", file=sys.stderr, flush=True)
        _killpg(proc.pid, signal.SIGKILL)  # the group: also any child the command left behind
        proc.wait()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
