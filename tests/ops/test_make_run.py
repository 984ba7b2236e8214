"""bin/supervise.py as `make run` uses it: the embedded PostgreSQL first, migrate, the long-lived commands, one stop.

Real processes throughout: the supervisor, the wheel's PostgreSQL (its data in a
fresh directory under var/, as make run's is under var/postgres), manage.py.
The commands' DATABASE_URL is the test database's until the supervisor gives them
the embedded server's, so a migrate that reaches the embedded server got it there.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from django.conf import settings

from tests.front_door import free_port
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


def test_a_then_command_runs_once_the_rest_are_up_and_its_end_stops_nothing(tmp_path):
    marker, log = tmp_path / "name", tmp_path / "log"
    # The app writes its LOG_NAME (its log file's name, from supervise) where the then command reads it,
    # through a rename, so the reader never sees the file before its contents.
    app = f"{PYTHON} -c \"import os, pathlib, time; pathlib.Path('{marker}.part').write_text(os.environ['LOG_NAME']); os.replace('{marker}.part', '{marker}'); time.sleep(600)\""  # noqa: E501
    reader = f"{PYTHON} -c \"import os, time; [time.sleep(0.05) for _ in iter(lambda: os.path.exists('{marker}'), True)]; print('then saw', open('{marker}').read(), os.environ['LOG_NAME'])\""  # noqa: E501
    proc = supervise("app", app, "--then", reader, log=log)
    wait_for(lambda: "then saw" in log.read_text() or proc.poll() is not None, "the then command's line")
    assert "then saw app setup" in log.read_text()
    assert proc.poll() is None  # the then command ended; the app runs on
    os.kill(proc.pid, signal.SIGINT)
    assert ended(proc, log) == 0


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


# -- make run as a newcomer meets it: a fresh clone's terminal ------------------------------------


def fresh_clone(into: Path) -> Path:
    """The tracked files as they are in this checkout (no var/, no .env), with this test's virtualenv as .venv."""
    root = Path(settings.BASE_DIR)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (root / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, into / name)
    (into / ".venv").symlink_to(Path(sys.prefix))
    return into


def make_env() -> dict[str, str]:
    """A newcomer's shell: none of the test run's DATABASE_URL, broker, DEBUG or secret."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "USER", "TMPDIR")
    return {name: os.environ[name] for name in keep if name in os.environ}


def lines_of(log: Path) -> list[str]:
    return log.read_text().splitlines()


@pytest.mark.slow
def test_a_fresh_clone_s_make_run_prints_a_short_terminal_ending_with_the_login_the_token_and_the_links(workdir):
    clone, log = fresh_clone(workdir / "clone"), workdir / "terminal"
    port = free_port()
    # The virtualenv is installed already: a stamp newer than requirements.txt says so, as after a first make run.
    stamp = workdir / "installed"
    stamp.touch()
    with open(log, "wb") as out:
        make = subprocess.Popen(
            ["make", "run", f"PORT={port}", f"RUNTIME_STAMP={stamp}"],
            # A sweep every second, so one has run by the time the terminal is read.
            cwd=clone, env={**make_env(), "SWEEP_INTERVAL_SECONDS": "1"},
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        # Bounds, not measures: PostgreSQL's initdb and the migrations take a while on a busy machine.
        wait_for(lambda: "admin: " in log.read_text() or make.poll() is not None, "the demo links", seconds=600)
        assert make.poll() is None, log.read_text()
        before_any_request = lines_of(log)
        token = next(line for line in before_any_request if line.startswith("sus_"))
        assert len(before_any_request) <= 20, "\n".join(before_any_request)
        assert before_any_request[-4].startswith(f"login: http://127.0.0.1:{port}/console/  user admin")
        assert before_any_request[-2] == token
        assert f"API docs: http://127.0.0.1:{port}/api/docs/" in before_any_request[-1]

        base = f"http://127.0.0.1:{port}"
        runs = urllib.request.Request(f"{base}/api/v1/runs", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(runs, timeout=120) as answer:  # noqa: S310 - the server this test started
            assert answer.status == 200
        wait_for(lambda: "GET /api/v1/runs 200" in log.read_text(), "the request's line on the terminal")
        try:
            urllib.request.urlopen(f"{base}/api/v1/nothing-here", timeout=120)  # noqa: S310 - as above
        except urllib.error.HTTPError as refused:
            assert refused.code == 404
        wait_for(lambda: "GET /api/v1/nothing-here 404" in log.read_text(), "the 404's line")
        # One line per request: neither runserver's own line nor django.request's warning repeats it.
        assert log.read_text().count("/api/v1/nothing-here") == 1
        # The worker tried the demo's webhook, whose receiver nobody started: in its log, not on the terminal.
        worker_log = clone / "var" / "log" / "worker.log"
        attempted = lambda: worker_log.exists() and "webhook attempt" in worker_log.read_text()  # noqa: E731
        wait_for(attempted, "a webhook attempt", seconds=300)
        # The beat's sweep ran on the sweep's own worker (its queue, `sweep`), not on push's.
        sweeper_log = clone / "var" / "log" / "sweeper.log"
        wait_for(lambda: sweeper_log.exists() and "sweep finished" in sweeper_log.read_text(), "a sweep", seconds=300)
        assert "sweep finished" not in worker_log.read_text()
        terminal = log.read_text()
        assert "webhook attempt" not in terminal and "sweep" not in terminal
        assert "No hostname was supplied" not in terminal
        assert not [line for line in terminal.splitlines() if line.startswith("{")]  # no JSON for people
        web_lines = [json.loads(line) for line in lines_of(clone / "var" / "log" / "web.log")]
        assert any(line["message"] == "GET /api/v1/runs 200" for line in web_lines)
        assert not any("No hostname" in path.read_text() for path in (clone / "var" / "log").glob("*.log"))
        assert not (clone / "control").exists()  # the broker's files stay under var/

        creds = subprocess.run(["make", "-s", "creds"], cwd=clone, env=make_env(), capture_output=True, text=True)
        assert creds.stdout.splitlines()[-4:] == before_any_request[-4:]
        assert (clone / "var" / "credentials.txt").stat().st_mode & 0o777 == 0o600
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGINT)  # Ctrl-C, as a terminal sends it to make's process group
        ended(make, log)
    assert "supervise: stopping PostgreSQL." in log.read_text()
    assert processes_naming(clone) == []
