"""``dpfit privacy`` prints the conversions and calibration; bad input exits with status 2."""

import subprocess
import sys

import pytest

from dpfit.cli import main


def test_rho_to_epsilon(capsys):
    assert main(["privacy", "--rho", "0.5", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert "4.72839" in out and "5.29853" in out and "4.37718" in out


def test_epsilon_to_rho(capsys):
    assert main(["privacy", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "2"]) == 0
    out = capsys.readouterr().out
    assert "0.0305566" in out and "0.268051" in out


@pytest.mark.parametrize("args", [["--rho", "-1"], ["--rho", "0.5", "--delta", "0"]])
def test_bad_values_exit_2(args, capsys):
    assert main(["privacy", *args]) == 2
    assert "error" in capsys.readouterr().err


def test_console_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "dpfit", "privacy", "--rho", "0.125"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "2.16572" in result.stdout
