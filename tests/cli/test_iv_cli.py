"""``dpfit iv``: a private IV fit from the shell, with the non-private 2SLS beside it."""

from __future__ import annotations

from dpfit.cli import main
from dpfit.cli._iv_demo import IV_BOUNDS, IV_FORMULA, IV_Y_BOUNDS

BOUND_ARGS = [a for k, (lo, hi) in IV_BOUNDS.items() for a in ("--bound", f"{k}={lo},{hi}")]
BOUND_ARGS += ["--y-bounds", "{},{}".format(*IV_Y_BOUNDS)]


def test_iv_on_card(capsys):
    argv = [
        "iv",
        "card",
        "--sample",
        "liang2025",
        "--formula",
        IV_FORMULA,
        "--rho",
        "1",
        "--seed",
        "0",
        "--compare-2sls",
        *BOUND_ARGS,
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for piece in [
        "DP IV regression results",
        "2191 (public)",
        "rho = 1",
        "the population coefficients",
        "NON-PRIVATE 2SLS",
        "educ                         0.0744",
    ]:
        assert piece in out, piece


def test_iv_errors_are_one_line(capsys):
    assert main(["iv", "card", "--formula", IV_FORMULA, "--rho", "1"]) == 2
    assert "give --bound" in capsys.readouterr().err
    assert main(["iv", "card", "--formula", IV_FORMULA, "--rho", "1", "--bound", "lwage=4,8"]) == 2
    assert "--y-bounds" in capsys.readouterr().err
    argv = ["iv", "card", "--formula", "lwage ~ [educ + exper ~ nearc4]", "--rho", "1"]
    assert main([*argv, "--unscaled"]) == 2
    assert "under-identified" in capsys.readouterr().err
    argv = [
        "iv",
        "card",
        "--sample",
        "liang2025",
        "--formula",
        IV_FORMULA,
        "--rho",
        "1",
        *BOUND_ARGS[2:],
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "missing ['educ']" in err and "unknown" not in err  # an empty list is not shown
    assert main(["iv", "card", "--formula", IV_FORMULA, "--rho", "0", "--unscaled"]) == 2
    assert "rho" in capsys.readouterr().err
