"""Fault injection on the budget store: a fit whose noise was drawn always returns its
result, and the store never records less than was drawn.

Faults are injected at the SQLite connection layer of ``dpfit.privacy._store_file`` (a
connection that fails every Nth call), and by making the file read-only, deleting it or
holding its write lock mid-fit. Before the fix, a fit that had drawn all its releases lost
its result when the store could not be written at the end, and the command line said only
"the budget store could not be used (OperationalError)".
"""

from __future__ import annotations

import os
import sqlite3
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.cli import main
from dpfit.exceptions import BudgetStoreError, BudgetStoreWarning
from dpfit.mechanisms import recording
from dpfit.privacy import _store_file, open_budget
from dpfit.privacy.store import verify_store

pytestmark = pytest.mark.filterwarnings(
    "ignore::dpfit.exceptions.SideConditionWarning", "ignore::dpfit.exceptions.CoverageWarning"
)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.uniform(0, 1, 400)})
    df["y"] = 1 + df["x"] + rng.normal(0, 0.2, 400)
    return df


def _fit(frame, budget, **kwargs):
    return dpfit.ols(
        "y ~ x", frame, rho=0.25, budget=budget, bounds={"x": (0, 1)}, y_bounds=(-1, 4),
        clip=1.0, steps=30, precondition=False, interval=None, random_state=0, **kwargs,
    )  # fmt: skip


class _Flaky:
    """A connection whose every ``every``-th call of execute/executemany fails, as a full or
    failing disk would (the count runs across connections)."""

    def __init__(self, conn: sqlite3.Connection, counter: list[int], every: int) -> None:
        self._conn, self._counter, self._every = conn, counter, every

    def _tick(self) -> None:
        self._counter[0] += 1
        if self._counter[0] % self._every == 0:
            raise sqlite3.OperationalError("disk I/O error (injected)")

    def execute(self, *args):
        self._tick()
        return self._conn.execute(*args)

    def executemany(self, *args):
        self._tick()
        return self._conn.executemany(*args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_a_connection_failing_every_nth_call_never_loses_a_charge_or_a_result(
    tmp_path, frame, monkeypatch
):
    # For each N, a stored-budget fit runs with every N-th SQL call failing (from the first
    # call on, with the counter offset by each phase). Whatever fails: if noise was drawn the
    # fit returns its result, the store records at least what was drawn, and the store still
    # verifies; if it raised, nothing was drawn.
    plain = _store_file._sqlite_connect
    outcomes = {"result": 0, "raised before drawing": 0, "warned": 0}
    for every in range(2, 26):
        for offset in range(0, every, max(1, every // 4)):
            path = tmp_path / f"b{every}-{offset}.sqlite"
            budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
            counter = [offset]

            def flaky(*args, counter=counter, every=every, **kwargs):
                return _Flaky(plain(*args, **kwargs), counter, every)

            monkeypatch.setattr(_store_file, "_sqlite_connect", flaky)
            with recording() as rec, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    result = _fit(frame, budget)
                except (BudgetStoreError, sqlite3.Error, ValueError):
                    result = None
            monkeypatch.setattr(_store_file, "_sqlite_connect", plain)
            drawn = sum(entry.rho for entry in rec.entries)
            stored = open_budget(path, dataset="d")
            if result is None:
                assert len(rec) == 0, (every, offset)
                outcomes["raised before drawing"] += 1
            else:
                assert result.rho == pytest.approx(drawn, rel=1e-12)
                outcomes["result"] += 1
            assert stored.spent >= drawn * (1 - 1e-12), (every, offset)
            assert stored.spent <= 0.25
            verify_store(path)
            outcomes["warned"] += any(issubclass(w.category, BudgetStoreWarning) for w in caught)
    assert outcomes["result"] > 0 and outcomes["raised before drawing"] > 0
    assert outcomes["warned"] > 0


def _readonly(monkeypatch):
    """From now on, open the store read-only (as a file or directory made read-only would
    be for a user other than root)."""
    plain = _store_file._sqlite_connect
    monkeypatch.setattr(
        _store_file,
        "_sqlite_connect",
        lambda path, **k: plain(f"file:{path}?mode=ro", uri=True, **k),
    )


@pytest.mark.parametrize("fault", ["read-only", "deleted", "locked"])
def test_a_fit_whose_store_fails_at_the_end_returns_its_result_and_warns(
    tmp_path, frame, monkeypatch, fault
):
    path = tmp_path / "b.sqlite"
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    holder = []

    def fail_now(*_):
        if holder:
            return
        if fault == "read-only":
            _readonly(monkeypatch)
        elif fault == "deleted":
            os.unlink(path)
        else:  # another writer holds the lock past the (shortened) busy timeout
            monkeypatch.setattr(_store_file, "_TIMEOUT", 0.05)
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("BEGIN EXCLUSIVE")
            holder.append(conn)
        holder.append(True)

    from dpfit.mechanisms import recorder

    with recording() as rec, recorder.observing(fail_now):  # fails after the first release
        with pytest.warns(BudgetStoreWarning, match=r"did not record the end of reservation #1"):
            result = _fit(frame, budget)
    assert result.rho == pytest.approx(sum(e.rho for e in rec.entries), rel=1e-12)
    assert np.all(np.isfinite(result.coef_ if hasattr(result, "coef_") else result.estimate))
    if fault == "deleted":
        assert not path.exists()
        return
    for thing in holder:
        if isinstance(thing, sqlite3.Connection):
            thing.execute("ROLLBACK")
            thing.close()
    monkeypatch.undo()
    stored = open_budget(path, dataset="d")
    assert stored.spent == 0.25  # the whole reservation stays charged: never less than drawn
    assert [c.rho for c in stored.history()] == [0.25]


def test_the_command_line_says_in_one_line_what_happened(tmp_path, frame, monkeypatch, capsys):
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    path = tmp_path / "b.sqlite"
    dpfit.Budget.open(path, dataset="d", rho=1.0)
    argv = ["fit", str(data), "--formula", "y ~ x", "--rho", "0.25", "--bound", "x=0,1"]
    argv += ["--y-bounds=-1,4", "--clip", "1", "--total-steps", "30", "--budget-store", str(path)]
    _readonly(monkeypatch)  # the charge before the fit fails: nothing is drawn
    with recording() as rec:
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(rec) == 0
    assert "could not be written (OperationalError: attempt to write a readonly database)" in err
    assert "nothing was charged or drawn" in err
    monkeypatch.undo()

    from dpfit.mechanisms import recorder

    def delete_once(*_):
        if path.exists():
            os.unlink(path)

    with recorder.observing(delete_once):  # the store disappears mid-fit: result + warning
        assert main(argv) == 0
    out = capsys.readouterr()
    assert "Coef." in out.out or "coef" in out.out.lower()
    lines = [line for line in out.err.splitlines() if "budget store" in line]
    assert len(lines) == 1 and "stays charged" in lines[0] and "does not exist" in lines[0]
