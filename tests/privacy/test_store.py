"""The persistent budget store: one total per dataset, charged in SQLite transactions.

Processes racing to spend cannot overspend; a process killed mid-fit leaves its charge
recorded; corrupt or foreign files are refused; the history lists every release.
"""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.cli import main
from dpfit.mechanisms import recording
from dpfit.privacy import StoredBudget, open_budget


@pytest.fixture
def store(tmp_path):
    return tmp_path / "budget.sqlite"


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.uniform(0, 10, 500)})
    df["y"] = 1 + 0.5 * df["x"] + rng.normal(0, 1, 500)
    return df


def test_one_total_per_dataset(store):
    budget = dpfit.Budget.open(store, dataset="survey", rho=1.0)
    assert isinstance(budget, StoredBudget) and isinstance(budget, dpfit.Budget)
    budget.spend(0.25)
    assert dpfit.Budget.open(store, dataset="survey", rho=1.0).remaining == pytest.approx(0.75)
    assert open_budget(store, dataset="survey").spent == pytest.approx(0.25)
    with pytest.raises(ValueError, match="already has a total of rho = 1"):
        dpfit.Budget.open(store, dataset="survey", rho=2.0)
    with pytest.raises(ValueError, match=r"no budget in this store.*dpfit budget create"):
        open_budget(store, dataset="census")
    other = dpfit.Budget.open(store, dataset="census", rho=0.5)  # a second dataset, apart
    assert other.remaining == 0.5 and budget.remaining == pytest.approx(0.75)


def test_a_charge_beyond_the_total_changes_nothing(store):
    budget = dpfit.Budget.open(store, dataset="d", rho=1.0)
    budget.spend(0.75)
    with pytest.raises(dpfit.BudgetExceededError, match=r"remaining budget 0\.25 of dataset 'd'"):
        budget.spend(0.5)
    assert budget.spent == pytest.approx(0.75) and len(budget.history()) == 1


@pytest.mark.filterwarnings(  # a small test design: the released meat is mostly noise (public)
    "ignore:The population interval may not cover:dpfit.exceptions.CoverageWarning"
)
def test_history_lists_every_release_with_mechanism_and_rho(store, frame):
    budget = dpfit.Budget.open(store, dataset="frame", rho=1.0)
    res = dpfit.ols(
        "y ~ x",
        frame,
        rho=0.5,
        budget=budget,
        bounds={"x": (0, 10)},
        y_bounds=(-5, 15),
        steps=200,
        random_state=0,
    )
    (charge,) = budget.history()
    assert charge.rho == 0.5 and charge.mechanism == "dpfit.ols y ~ x"
    by_label = {label: (count, rho) for label, count, rho in charge.releases}
    for entry in res.ledger.releases:
        assert entry.label in by_label
    assert sum(rho for _, rho in by_label.values()) == pytest.approx(res.rho, rel=1e-9)
    assert budget.spent == pytest.approx(res.rho, rel=1e-9)


def test_a_fit_that_fails_keeps_only_what_it_drew(store, frame):
    budget = dpfit.Budget.open(store, dataset="frame", rho=1.0)
    with recording() as rec, pytest.raises(ValueError):
        dpfit.ols("y ~ x", frame, rho=0.5, budget=budget, bounds={"x": (0, 10, 20)})
    assert len(rec) == 0 and budget.spent == pytest.approx(0.0, abs=1e-15)


_SPENDER = """
import sys, dpfit
budget = dpfit.Budget.open(sys.argv[1], dataset="race")
share = dpfit.privacy.split(1.0, 20)[0]  # 20 x 0.05 is above 1 exactly; 20 shares are not
ok = 0
for _ in range(6):
    try:
        budget.spend(share)
        ok += 1
    except dpfit.BudgetExceededError:
        pass
print(ok)
"""


def test_eight_racing_processes_cannot_overspend(store):
    dpfit.Budget.open(store, dataset="race", rho=1.0)  # 20 charges of 0.05 fit, 48 are tried
    procs = [
        subprocess.Popen([sys.executable, "-c", _SPENDER, str(store)], stdout=subprocess.PIPE)
        for _ in range(8)
    ]
    granted = sum(int(p.communicate(timeout=300)[0]) for p in procs)
    assert all(p.returncode == 0 for p in procs)
    budget = open_budget(store, dataset="race")
    assert granted == 20 == len(budget.history())
    assert budget.spent == pytest.approx(1.0) and budget.spent <= 1.0


def test_a_process_killed_mid_fit_leaves_its_charge_recorded(store, frame, tmp_path):
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    dpfit.Budget.open(store, dataset="d", rho=1.0)
    argv = [sys.executable, "-m", "dpfit", "fit", str(data), "--formula", "y ~ x"]
    argv += ["--rho", "0.4", "--clip", "5", "--total-steps", "50000000", "--interval", "none"]
    proc = subprocess.Popen([*argv, "--budget-store", str(store)], stderr=subprocess.DEVNULL)
    budget = open_budget(store, dataset="d")
    deadline = time.monotonic() + 120
    while not budget.history() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # inside the fit now, drawing noise
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    (charge,) = budget.history()
    assert charge.rho == 0.4 and budget.spent == pytest.approx(0.4)


def test_corrupt_or_foreign_files_are_refused(tmp_path, store):
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    foreign = tmp_path / "other.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    dpfit.Budget.open(store, dataset="d", rho=1.0)
    corrupt = tmp_path / "corrupt.sqlite"
    raw = bytearray(store.read_bytes())
    raw[100:] = b"\xff" * (len(raw) - 100)  # keep the header, wreck every page
    corrupt.write_bytes(bytes(raw))
    for path, match in [
        (text, "not a dpfit budget store"),
        (foreign, "SQLite database but not a dpfit budget store"),
        (corrupt, "not a dpfit budget store"),
        (tmp_path / "missing.sqlite", "does not exist"),
    ]:
        with pytest.raises(ValueError, match=match):
            open_budget(path, dataset="d")
    assert text.read_text() == "not a database"  # refused, not overwritten


def test_a_budget_crossing_processes(store):
    with pytest.raises(TypeError, match=r"n_jobs > 1.*dpfit.Budget.open"):
        pickle.dumps(dpfit.Budget(rho=1.0))
    stored = dpfit.Budget.open(store, dataset="d", rho=1.0)
    copy = pickle.loads(pickle.dumps(stored))  # a handle on the same file: safe to share
    copy.spend(0.5)
    assert stored.spent == pytest.approx(0.5)


def test_cli_budget_workflow(store, frame, tmp_path, capsys):
    data = tmp_path / "survey.csv"
    frame.to_csv(data, index=False)
    assert main(["budget", "create", str(store), "--dataset", "survey", "--rho", "0.5"]) == 0
    fit = ["fit", str(data), "--formula", "y ~ x", "--bound", "x=0,10", "--y-bounds=-5,15"]
    fit += ["--total-steps", "100", "--budget-store", str(store)]
    assert main([*fit, "--rho", "0.3"]) == 0
    capsys.readouterr()
    with recording() as rec:
        assert main([*fit, "--rho", "0.3"]) == 2  # 0.2 left
    err = capsys.readouterr().err
    assert "remaining budget 0.2" in err and err.count("\n") == 1 and len(rec) == 0
    assert main([*fit, "--rho", "0.1", "--dataset", "census"]) == 2
    assert "dpfit budget create" in capsys.readouterr().err
    assert main(["budget", "show", str(store)]) == 0
    assert "survey" in capsys.readouterr().out
    assert main(["budget", "history", str(store), "--dataset", "survey"]) == 0
    out = capsys.readouterr().out
    assert "dpfit.ols y ~ x" in out and "dp_gd/gradient" in out and "spent 0.3" in out
    assert main(["budget", "create", str(store), "--dataset", "survey", "--rho", "1"]) == 2
    assert "already has a total" in capsys.readouterr().err


def test_cli_iv_charges_the_store(store, tmp_path, capsys):
    rng = np.random.default_rng(1)
    z = rng.integers(0, 2, 2000).astype(float)
    x = np.clip(1 + 2 * z + rng.normal(size=2000), -3, 6)
    df = pd.DataFrame({"x": x, "z": z, "y": np.clip(1 + 0.5 * x + rng.normal(size=2000), -4, 7)})
    path = tmp_path / "ivdata.csv"
    df.to_csv(path, index=False)
    dpfit.Budget.open(store, dataset="ivdata", rho=1.0)
    argv = ["iv", str(path), "--formula", "y ~ [x ~ z]", "--rho", "0.5"]
    argv += ["--bound", "x=-3,6", "--bound", "z=0,1", "--y-bounds=-4,7"]
    assert main([*argv, "--budget-store", str(store)]) == 0  # the CLI prints its warnings
    budget = open_budget(store, dataset="ivdata")
    (charge,) = budget.history()
    assert charge.rho == 0.5 and charge.mechanism == "dpfit.iv y ~ [x ~ z]"
    assert sum(rho for _, _, rho in charge.releases) == pytest.approx(0.5)
    assert budget.spent == pytest.approx(0.5)


def test_history_is_chronological_and_readable(store):
    budget = dpfit.Budget.open(store, dataset="d", rho=1.0)
    for rho in (0.1, 0.2):
        budget.spend(rho)
    script = textwrap.dedent(
        f"""
        import dpfit
        b = dpfit.Budget.open({str(store)!r}, dataset="d")
        print([c.rho for c in b.history()])
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.stdout.strip() == "[0.1, 0.2]"


def test_the_stored_check_is_exact_at_the_boundary_like_an_in_memory_budget(store):
    # two charges of 0.1 leave exactly 0.3 - 0.2 (as a Fraction) of a total of 0.3: both
    # budgets decide on the exact sum against the total, never on a rounded float sum
    from fractions import Fraction

    stored = dpfit.Budget.open(store, dataset="edge", rho=0.3)
    memory = dpfit.Budget(rho=0.3)
    for b in (stored, memory):
        for _ in range(2):
            b.spend(0.1)
    limit = Fraction(0.3) - 2 * Fraction(0.1)
    fits = float(limit)
    while Fraction(fits) > limit:
        fits = np.nextafter(fits, 0.0)
    above = np.nextafter(fits, 1.0)
    for b in (stored, memory):
        assert b.can_afford(float(fits)) and not b.can_afford(float(above))
        assert not b.can_afford(0.1)  # 3 x 0.1 > 0.3 exactly
    with pytest.raises(dpfit.BudgetExceededError):
        stored.spend(float(above))
    stored.spend(float(fits))
    assert len(stored.history()) == 3 and stored.remaining == 0.0


def test_history_lists_a_streamed_release(store):
    # A correlated-noise stream is one matrix release charged up front; a reservation's
    # history must list it beside one-shot releases (it saw only the latter before).
    from dpfit.mechanisms import gaussian, gaussian_rows, make_noise_source
    from dpfit.privacy import PrivacyLedger

    budget = dpfit.Budget.open(store, dataset="d", rho=1.0)
    with budget.reserve(0.5, mechanism="stream and mean"):
        ledger = PrivacyLedger(budget=budget)
        source = make_noise_source(0)
        gaussian_rows(
            steps=4,
            rows=4,
            dim=3,
            sensitivity=1.0,
            noise_std=2.0,
            ledger=ledger,
            rng=source,
            label="ftrl/gradients",
        )
        gaussian(0.0, sensitivity=1.0, noise_std=4.0, ledger=ledger, rng=source, label="mean")
    (charge,) = [c for c in budget.history() if c.mechanism == "stream and mean"]
    rho = {label: r for label, _, r in charge.releases}
    assert rho == pytest.approx({"ftrl/gradients": 1 / 8, "mean": 1 / 32})
    assert budget.spent == pytest.approx(1 / 8 + 1 / 32)


def test_a_checked_fit_inside_a_reservation_draws_from_it(store):
    # dpfit.iv reserves its whole rho on a stored budget; called inside an open reservation
    # (a checked fit whose fit is itself checked) it draws from that one, which caps it.
    frame = pd.DataFrame({"z": np.tile([0.0, 1.0], 250)})
    frame["x"] = 1 + 2 * frame["z"] + np.linspace(-1, 1, 500)
    frame["y"] = 1 + 0.5 * frame["x"] + np.cos(np.arange(500))
    budget = dpfit.Budget.open(store, dataset="d", rho=1.0)
    with budget.reserve(0.6, mechanism="outer"):
        assert budget.reserving
        res = dpfit.iv(
            "y ~ [x ~ z]",
            frame,
            rho=0.5,
            budget=budget,
            bounds={"x": (-1, 5), "z": (0, 1)},
            y_bounds=(-2, 6),
            random_state=0,
        )
    assert not budget.reserving
    assert res.rho == pytest.approx(0.5) and budget.spent == pytest.approx(0.5, rel=1e-9)
    assert budget.history()[0].mechanism == "outer"
