"""``dpfit reproduce --budget-store``: trials on a bundled dataset are charged to its stored
total before any runs; a store without the dataset, or too small a total, is refused with
nothing charged or run; a resumed run pays only for the trials it still has to run. A
reproduction shows a bar of its trials against their total."""

import re

import pytest

import dpfit
from dpfit.cli import main
from dpfit.experiments import get

# liang2025-fig13 at smoke scale: 3 replicates of one DP-2S-GD run at rho = 1 on Card.
NAME, TRIALS, RHO = "liang2025-fig13", 3, 1.0


def _argv(tmp_path, store):
    out = tmp_path / "out"
    return [
        "reproduce",
        NAME,
        "--scale",
        "smoke",
        "--out",
        str(out),
        "--jobs",
        "1",
        "--no-progress",
        "--budget-store",
        str(store),
    ]


def test_the_declared_cost_is_what_a_trial_spends():
    exp = get(NAME)
    (params, _), *_ = exp.tasks("smoke")
    assert exp.data_rho(params) == {"card": RHO}
    metrics = exp.trial(params, 0)
    assert metrics["rho_spent"] == pytest.approx(RHO, rel=1e-12)


def test_charged_once_before_the_trials_and_not_again_on_resume(tmp_path, capsys):
    store = tmp_path / "budget.sqlite"
    dpfit.Budget.open(store, dataset="card", rho=5.0)
    assert main(_argv(tmp_path, store)) == 0
    assert "charged rho = 3 to dataset 'card'" in capsys.readouterr().err
    budget = dpfit.Budget.open(store, dataset="card")
    (charge,) = budget.history()
    assert charge.rho == pytest.approx(TRIALS * RHO, rel=1e-12)
    assert charge.mechanism == f"dpfit reproduce {NAME} --scale smoke ({TRIALS} trials)"
    assert main(_argv(tmp_path, store)) == 0  # every trial is stored: nothing to run or pay
    assert "nothing charged" in capsys.readouterr().err
    assert budget.spent == pytest.approx(TRIALS * RHO, rel=1e-12)


@pytest.mark.parametrize(
    ("dataset", "total", "match"),
    [
        ("labsup", 5.0, r"dataset 'card' has no budget in this store"),
        ("card", 2.5, r"the 3 trials to run spend rho = 3 on dataset 'card', more than the 2.5"),
    ],
)
def test_a_store_that_does_not_match_is_refused_before_anything_runs(
    tmp_path, capsys, dataset, total, match
):
    store = tmp_path / "budget.sqlite"
    dpfit.Budget.open(store, dataset=dataset, rho=total)
    assert main(_argv(tmp_path, store)) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpfit reproduce: error: ") and err.count("\n") == 1
    assert re.search(match, err)
    assert dpfit.Budget.open(store, dataset=dataset).spent == 0
    assert not (tmp_path / "out" / "index.html").exists()


def test_a_missing_store_is_refused(tmp_path, capsys):
    assert main(_argv(tmp_path, tmp_path / "nope.sqlite")) == 2
    assert "does not exist: create it with dpfit budget create" in capsys.readouterr().err
    assert not (tmp_path / "out" / "index.html").exists()


def test_experiments_on_synthetic_data_charge_nothing(tmp_path, capsys):
    store = tmp_path / "budget.sqlite"
    dpfit.Budget.open(store, dataset="card", rho=1.0)
    argv = _argv(tmp_path, store)
    argv[1] = "mechanism-check"
    assert main(argv) == 0
    assert "no trial to run reads a bundled dataset: nothing charged" in capsys.readouterr().err
    assert dpfit.Budget.open(store, dataset="card").spent == 0


def test_progress_counts_trials_against_their_total(tmp_path, capsys):
    out = str(tmp_path / "out")
    argv = ["reproduce", "mechanism-check", "--scale", "smoke", "--out", out, "--progress"]
    assert main(argv) == 0
    assert "dpfit reproduce (smoke): 100%" in capsys.readouterr().err.replace("\r", "\n")
    assert main(argv) == 0  # resumed: nothing left to run, no bar
    assert "dpfit reproduce (smoke)" not in capsys.readouterr().err
