"""``dpfit reproduce``: listing, exit status on failed claims, bad input, Ctrl-C and resume."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpfit.cli import main

HARNESS = Path(__file__).resolve().parents[1] / "experiments"
HOLD_ENV = "DPFIT_HARNESS_HOLD_FROM"  # harness_experiments.HOLD_ENV


def test_list(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert "mechanism-check" in out and "smoke 4" in out


def test_missing_out_is_a_usage_error(capsys):
    assert main(["reproduce", "mechanism-check"]) == 2
    assert "--out" in capsys.readouterr().err


def test_unknown_experiment(capsys, tmp_path):
    assert main(["reproduce", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown experiment" in capsys.readouterr().err


def test_unknown_experiment_suggests_close_names_not_all(capsys, tmp_path):
    assert main(["reproduce", "brown2024", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "did you mean brown2024-fig" in err
    assert "varshney2022" not in err and "--list" in err


def test_help_examples_name_registered_experiments():
    from dpfit.cli.reproduce import EXAMPLES
    from dpfit.experiments import names

    commands = [line for line in EXAMPLES.splitlines() if "dpfit reproduce" in line]
    assert len(commands) == 3
    for line in commands:
        words = line.split("dpfit reproduce", 1)[1].split("#")[0].split()
        for word in words:
            if word.startswith("-"):
                break
            assert word in names(), word


def test_passing_run_writes_report_and_exits_0(tmp_path, capsys):
    out = tmp_path / "rep"
    argv = ["reproduce", "mechanism-check", "--scale", "smoke", "--out", str(out), "--jobs", "1"]
    assert main([*argv, "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "PASS" in text and (out / "index.html").exists() and (out / "results.sqlite").exists()


@pytest.fixture
def extra_module(tmp_path):
    """A module that registers the failing harness experiment when imported."""
    (tmp_path / "extra_experiments.py").write_text(
        "from dpfit.experiments import register\n"
        "from harness_experiments import FAILING, SLOW\n"
        "register(FAILING)\n"
        "register(SLOW)\n"
    )
    return tmp_path


def _env(extra_module):
    """The harness modules on the path, after the source of the dpfit under test (so the
    subprocess imports the same dpfit as this process, also from a second worktree)."""
    import dpfit

    source = Path(dpfit.__file__).resolve().parents[1]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(source), str(extra_module), str(HARNESS)]),
    }


def test_failed_claim_gives_nonzero_exit_unless_allowed(tmp_path, extra_module):
    env = _env(extra_module)
    cmd = [
        sys.executable,
        "-m",
        "dpfit",
        "reproduce",
        "harness-failing",
        "--import",
        "extra_experiments",
        "--scale",
        "smoke",
        "--out",
        str(tmp_path / "rep"),
        "--jobs",
        "1",
        "--no-progress",
    ]
    for extra, status in [([], 1), (["--allow-failures"], 0)]:  # the second run reuses trials
        done = subprocess.run([*cmd, *extra], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == status, done.stderr
        assert "FAIL" in done.stdout and "harness-failing / impossible" in done.stdout
        assert "2 claim(s) failed" in done.stderr  # one FAIL and one ERROR


# Ctrl-C is restored explicitly: a process started in the background inherits SIGINT ignored.
_CLI_WITH_CTRL_C = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from dpfit.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _stored(store):
    try:
        with sqlite3.connect(store) as db:
            return db.execute("SELECT count(*) FROM trials").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_ctrl_c_stops_workers_keeps_trials_and_rerun_resumes(tmp_path, extra_module):
    store = tmp_path / "rep" / "results.sqlite"
    cmd = [
        sys.executable,
        "-c",
        _CLI_WITH_CTRL_C,
        "reproduce",
        "harness-slow",
        "--import",
        "extra_experiments",
        "--scale",
        "smoke",
        "--out",
        str(tmp_path / "rep"),
        "--jobs",
        "2",
        "--no-progress",
        "--code-version",
        "pinned",
    ]
    held = {**_env(extra_module), HOLD_ENV: "5"}  # trials with k >= 5 wait for the Ctrl-C
    proc = subprocess.Popen(
        cmd, env=held, start_new_session=True, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 90
    while _stored(store) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "run the same command to resume" in err
    kept = _stored(store)
    assert 3 <= kept <= 10
    # no worker outlived the run: nothing of its process group is still running
    ps = subprocess.run(["ps", "-o", "stat=", "-g", str(proc.pid)], capture_output=True, text=True)
    assert all(s.startswith("Z") for s in ps.stdout.split()), ps.stdout
    done = subprocess.run(cmd, env=_env(extra_module), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _stored(store) == 20
