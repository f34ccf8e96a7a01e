"""``dpfit audit``: bounds next to the claim for a configuration given on the command line."""

import pytest

from dpfit.cli import main
from dpfit.mechanisms import GaussianReleases


def test_lists_the_targets_with_their_defaults(capsys):
    assert main(["audit", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("dp_gd", "noisy_gd", "dp_two_stage_gd", "dp_second_stage_gd", "dp_ftrl", "dp_sgd"):
        assert name in out
    assert "defaults: n=50 d=2 rho=0.5 clip=0.1 steps=10" in out


def test_prints_bounds_at_several_deltas_next_to_the_claim(capsys):
    args = ["audit", "dp_gd", "--runs", "300", "--seed", "1", "--rho", "0.25", "--n", "40"]
    assert main([*args, "--steps", "8", "--delta", "1e-6", "--delta", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "rho=0.25" in out and "n=40" in out and "steps=8" in out
    assert "eps lower bound" in out and "claimed eps (CKS)" in out
    # CKS epsilon of rho = 0.25 at 1e-6 and 0.05 (reliability 4.1: 3.5423 at 1e-6)
    assert "3.5423" in out and "1.2341" in out
    assert "verdict: no violation found" in out


def test_set_passes_any_target_option(capsys):
    args = ["audit", "dp_second_stage_gd", "--runs", "200", "--seed", "2", "--set", "rho=0.125"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "rho=0.125" in out and "2.1657" in out  # CKS(0.125, 1e-5)


def test_exit_status_1_when_the_claim_is_refuted(capsys, monkeypatch):
    # a broken mechanism: DP-GD's steps (charged as declared) add a tenth of their noise
    real = GaussianReleases.release
    monkeypatch.setattr(
        GaussianReleases, "release", lambda self, value: value + 0.1 * (real(self, value) - value)
    )
    assert main(["audit", "dp_gd", "--runs", "300", "--seed", "3"]) == 1
    assert "VIOLATION" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["audit"], "TARGET is required"),
        (["audit", "nope"], "audit target must be one of"),
        (["audit", "dp_gd", "--set", "steps"], "KEY=VALUE"),
        (["audit", "dp_gd", "--set", "lr=1"], "unknown option"),
        (["audit", "dp_gd", "--rho", "-1", "--runs", "5"], "rho"),
        (["audit", "dp_gd", "--runs", "1"], "runs"),
    ],
)
def test_bad_input_exits_2(args, fragment, capsys):
    assert main(args) == 2
    assert fragment in capsys.readouterr().err
