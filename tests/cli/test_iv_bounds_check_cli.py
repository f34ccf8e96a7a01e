"""``dpfit iv`` counts the records outside the bounds privately, as ``dpfit fit`` does: the
issue's ``--bound educ=0,5`` warns (it attenuated silently), the whole --rho is charged once
(to --budget-store too), and --bounds-check 0 turns the count off."""

import dpfit
from dpfit.cli import main

FORMULA = "lwage ~ 1 + [educ ~ nearc4 + fatheduc]"


def _argv(educ="0,18", *extra):
    return [
        "iv",
        "card",
        "--sample",
        "liang2025",
        "--formula",
        FORMULA,
        "--rho",
        "1",
        "--seed",
        "0",
        "--bound",
        f"educ={educ}",
        "--bound",
        "nearc4=0,1",
        "--bound",
        "fatheduc=0,18",
        "--y-bounds",
        "4.6,8",
        *extra,
    ]


def test_bounds_that_clip_most_records_warn(capsys):
    # 2184 of 2191 noisy count against a threshold of 0.05 n + 3 x 11.2 = 143 (noise std
    # sqrt(5) / sqrt(2 x 0.02)): far from the boundary for any seed.
    assert main(_argv("0,5")) == 0
    captured = capsys.readouterr()
    assert "SideConditionWarning: the public bounds of ['educ'] clip many records" in captured.err
    assert "rho = 1\n" in captured.out and "Bounds check" in captured.out


def test_bounds_that_hold_are_quiet_and_the_check_can_be_turned_off(capsys):
    assert main(_argv()) == 0
    captured = capsys.readouterr()
    assert "clip many records" not in captured.err and "Bounds check" in captured.out
    assert main(_argv("0,5", "--bounds-check", "0")) == 0
    captured = capsys.readouterr()
    assert "clip many records" not in captured.err and "Bounds check" not in captured.out


def test_the_whole_rho_is_one_stored_charge(tmp_path, capsys):
    store = tmp_path / "budget.sqlite"
    budget = dpfit.Budget.open(store, dataset="card", rho=1.5)
    assert main(_argv("0,18", "--budget-store", str(store))) == 0
    (charge,) = budget.history()
    assert (
        charge.rho == 1.0 and charge.mechanism == f"dpfit.iv {FORMULA}"
    )  # the API call the command makes
    assert budget.spent == 1.0
    assert main(_argv("0,18", "--budget-store", str(store))) == 2  # 0.5 left
    assert "exceeds the remaining budget" in capsys.readouterr().err
    assert budget.spent == 1.0


def test_a_bad_share_is_refused_before_anything(tmp_path, capsys):
    store = tmp_path / "budget.sqlite"
    budget = dpfit.Budget.open(store, dataset="card", rho=1.5)
    assert main(_argv("0,18", "--bounds-check", "1.5", "--budget-store", str(store))) == 2
    assert "--bounds-check" in capsys.readouterr().err
    assert budget.spent == 0
