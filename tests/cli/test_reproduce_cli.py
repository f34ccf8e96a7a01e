"""``dpfit reproduce``: listing, exit status on failed claims, bad input."""

import subprocess
import sys
from pathlib import Path

import pytest

from dpfit.cli import main

HARNESS = Path(__file__).resolve().parents[1] / "experiments"


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
        "from harness_experiments import FAILING\n"
        "register(FAILING)\n"
    )
    return tmp_path


def test_failed_claim_gives_nonzero_exit_unless_allowed(tmp_path, extra_module):
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(extra_module), str(HARNESS)])}
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
