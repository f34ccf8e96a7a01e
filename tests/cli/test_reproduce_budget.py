"""``dpfit reproduce --budget-store`` is refused with one line and exit 2, before anything is
charged, run or written: reproduction trials are seeded from a public hash and the real-data
experiments tune on the data, so their outputs are not private releases a budget could cover.
A reproduction shows a bar of its trials against their total."""

import pytest

import dpfit
from dpfit.cli import main
from dpfit.cli.reproduce import BUDGET_REFUSAL
from dpfit.experiments import runner


def _argv(tmp_path, name, store):
    out = str(tmp_path / "out")
    return [
        "reproduce",
        name,
        "--scale",
        "smoke",
        "--out",
        out,
        "--jobs",
        "1",
        "--no-progress",
        "--budget-store",
        str(store),
    ]


@pytest.mark.parametrize("name", ["liang2025-fig13", "liang2025-fig5", "mechanism-check"])
def test_budget_store_is_refused_before_anything_is_charged_or_run(
    tmp_path, capsys, monkeypatch, name
):
    def no_trials(*args, **kwargs):
        raise AssertionError("a trial ran despite the refusal")

    monkeypatch.setattr(runner, "run", no_trials)
    store = tmp_path / "budget.sqlite"
    dpfit.Budget.open(store, dataset="card", rho=5.0)
    assert main(_argv(tmp_path, name, store)) == 2
    err = capsys.readouterr().err
    assert err == f"dpfit reproduce: error: {BUDGET_REFUSAL}\n"
    assert "not private releases" in err and "dpfit fit / dpfit iv" in err
    assert dpfit.Budget.open(store, dataset="card").history() == []
    assert not (tmp_path / "out").exists()


def test_a_missing_store_is_refused_the_same_way_and_not_created(tmp_path, capsys):
    store = tmp_path / "nope.sqlite"
    assert main(_argv(tmp_path, "liang2025-fig13", store)) == 2
    assert BUDGET_REFUSAL in capsys.readouterr().err
    assert not store.exists() and not (tmp_path / "out").exists()


def test_progress_counts_trials_against_their_total(tmp_path, capsys):
    out = str(tmp_path / "out")
    argv = ["reproduce", "mechanism-check", "--scale", "smoke", "--out", out, "--progress"]
    assert main(argv) == 0
    assert "dpfit reproduce (smoke): 100%" in capsys.readouterr().err.replace("\r", "\n")
    assert main(argv) == 0  # resumed: nothing left to run, no bar
    assert "dpfit reproduce (smoke)" not in capsys.readouterr().err
