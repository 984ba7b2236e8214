"""bin/supervise.py as `make run` uses it: the embedded PostgreSQL first, migrate, the long-lived commands, one stop.

Real processes throughout: the supervisor, the wheel's PostgreSQL (its data in a
fresh directory under var/, as make run's is under var/postgres), manage.py.
The commands' DATABASE_URL is the test database's until the supervisor gives them
the embedded server's, so a migrate that reaches the embedded server got it there.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from django.conf import settings

from tests.processes import wait_for

PYTHON = sys.executable
SUPERVISE = str(settings.BASE_DIR / "bin" / "supervise.py")


def sleeper(marker: Path) -> str:
    """A long-lived command that says it has started by creating `marker`."""
    return f"{PYTHON} -c \"open('{marker}', 'w').close(); import time; time.sleep(600)\""


def supervise(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([PYTHON, SUPERVISE, *args], cwd=settings.BASE_DIR, stdout=out, stderr=subprocess.STDOUT)


def ended(proc: subprocess.Popen[bytes], log: Path) -> int:
    """The supervisor's exit status (a bound on the wait, not a measure)."""
    try:
        return proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the supervisor did not end:\n{log.read_text()}") from None


def processes_naming(path: Path) -> list[psutil.Process]:
    """Live (not zombie) processes whose command line names path: the server whose data is there, say."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and str(path) in " ".join(proc.info["cmdline"] or ()):
            found.append(proc)
    return found


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A directory under var/ (whose parents the wheel opens to its PostgreSQL user), removed afterwards."""
    var = settings.BASE_DIR / "var"
    var.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="test-make-run-", dir=var))
    yield path
    for proc in processes_naming(path):  # a failed test must not leave its server running
        proc.kill()
    shutil.rmtree(path, ignore_errors=True)


# -- the supervisor alone (no PostgreSQL) ------------------------------------------------------


def test_a_failing_first_command_stops_it_all_before_the_long_lived_ones_start(tmp_path):
    marker = tmp_path / "started"
    proc = supervise("--first", f"{PYTHON} -c 'raise SystemExit(3)'", "app", sleeper(marker), log=tmp_path / "log")
    assert ended(proc, tmp_path / "log") == 3
    assert not marker.exists()


def test_one_long_lived_command_ending_stops_the_others_with_its_status(tmp_path):
    marker = tmp_path / "started"
    # It ends (status 5) once the app has started, so the app is running when the stop comes.
    quitter = f"import os, time; [time.sleep(0.05) for _ in iter(lambda: os.path.exists('{marker}'), True)]; exit(5)"
    proc = supervise(
        "--first",
        f"{PYTHON} -c pass",
        "app",
        sleeper(marker),
        "quitter",
        f'{PYTHON} -c "{quitter}"',
        log=tmp_path / "log",
    )
    assert ended(proc, tmp_path / "log") == 5
    assert "quitter exited with status 5; stopping the others." in (tmp_path / "log").read_text()
    assert processes_naming(marker) == []  # the app (whose command names the marker) is stopped too


def test_commands_come_in_pairs(tmp_path):
    proc = supervise("web", log=tmp_path / "log")
    assert ended(proc, tmp_path / "log") == 2
    assert "commands come in pairs" in (tmp_path / "log").read_text()


# -- with the embedded PostgreSQL ----------------------------------------------------------------


def read_postmaster(data_dir: Path) -> tuple[int, Path]:
    """The server's pid and socket directory, from the postmaster.pid it writes when ready."""
    lines = (data_dir / "postmaster.pid").read_text().splitlines()
    return int(lines[0]), Path(lines[4])


@pytest.mark.slow
def test_make_run_s_postgresql_starts_serves_the_migrated_database_and_stops_with_one_ctrl_c(workdir):
    data_dir, marker, log = workdir / "postgres", workdir / "started", workdir / "log"
    proc = supervise(
        "--postgres", str(data_dir),
        "--first", f"{PYTHON} manage.py migrate --noinput -v0",
        "app", sleeper(marker),
        log=log,
    )  # fmt: skip
    wait_for(lambda: marker.exists() or proc.poll() is not None, "migrate to finish and the app to start")
    assert proc.poll() is None, log.read_text()
    pid, socket_dir = read_postmaster(data_dir)
    with psycopg.connect(f"postgresql://postgres@/suspensions?host={socket_dir}") as conn:
        assert conn.info.server_version >= 180000  # the wheel's PostgreSQL 18, not the machine's
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)  # a socket only, no TCP port
        migrated = conn.execute("SELECT count(*) FROM django_migrations WHERE app = 'suspensions'").fetchone()
        assert migrated is not None and migrated[0] > 0
        assert conn.execute("SELECT to_regclass('suspensions_run')").fetchone() == ("suspensions_run",)

    os.kill(proc.pid, signal.SIGINT)  # Ctrl-C, as make forwards it
    assert ended(proc, log) == 0, log.read_text()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert processes_naming(data_dir) == []
    assert not (socket_dir / ".s.PGSQL.5432").exists()  # the port (its socket) is free again
    assert "stopping PostgreSQL" in log.read_text()


@pytest.mark.slow
def test_a_failing_migrate_stops_postgresql_too(workdir):
    data_dir, marker, log = workdir / "postgres", workdir / "started", workdir / "log"
    proc = supervise(
        "--postgres", str(data_dir),
        "--first", f"{PYTHON} manage.py migrate suspensions no_such_migration --noinput",
        "app", sleeper(marker),
        log=log,
    )  # fmt: skip
    assert ended(proc, log) == 1, log.read_text()
    assert not marker.exists()
    assert (data_dir / "PG_VERSION").exists()  # it did start
    assert processes_naming(data_dir) == []


@pytest.mark.slow
def test_a_server_left_by_a_killed_supervisor_is_stopped_by_the_next_one(workdir):
    data_dir = workdir / "postgres"
    first = supervise("--postgres", str(data_dir), "app", sleeper(workdir / "one"), log=workdir / "log-1")
    wait_for(lambda: (workdir / "one").exists() or first.poll() is not None, "the first supervisor's app to start")
    pid, _ = read_postmaster(data_dir)
    first.kill()  # no stop at all: the server outlives it
    first.wait()
    assert psutil.Process(pid).is_running()

    second = supervise("--postgres", str(data_dir), "app", sleeper(workdir / "two"), log=workdir / "log-2")
    wait_for(lambda: (workdir / "two").exists() or second.poll() is not None, "the second supervisor's app to start")
    assert read_postmaster(data_dir)[0] == pid  # the same server, taken over
    os.kill(second.pid, signal.SIGINT)
    assert ended(second, workdir / "log-2") == 0
    assert processes_naming(data_dir) == []
