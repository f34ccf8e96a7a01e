"""Edits and rollbacks of the budget store that its own checks used to miss.

Before: ``UPDATE datasets SET spent = '0', last = NULL`` (or back to an older charge) from the
sqlite3 shell handed the whole budget back at the next open, detected only by
``dpfit budget verify``; deleting the newest charges and copying an older row's hash into
``meta`` passed every check, ``verify`` included; and restoring an older copy of the file
silently gave back what was spent since. Now the dataset rows are sealed with the chain's
head (every open and charge checks the seal), and a witness outside the store
(``PATH.witness``) refuses a store that is behind it until a rollback is accepted with
``dpfit budget verify PATH --accept-rollback``. The witness is a check, never the record:
when it cannot be written, the charge stands and a warning says so.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

import dpfit
from dpfit.cli import main
from dpfit.exceptions import BudgetStoreError, BudgetStoreWarning
from dpfit.privacy import _store_witness, open_budget
from dpfit.privacy.store import verify_store


@pytest.fixture
def path(tmp_path):
    return tmp_path / "budget.sqlite"


def _spent(path, charges=4):
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    for _ in range(charges):
        budget.spend(1.0 / charges)
    return budget


def _sql(path, script):
    with sqlite3.connect(path) as conn:  # as from the sqlite3 shell
        conn.executescript(script)


def _witness(path):
    return json.loads(path.with_name(path.name + ".witness").read_text())


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE datasets SET spent = '0', last = NULL WHERE name = 'd'",
        "UPDATE datasets SET spent = (SELECT spent FROM charges WHERE id = 1), last = 1 "
        "WHERE name = 'd'",
    ],
)
def test_a_dataset_row_set_back_is_refused_at_the_next_open(path, edit, capsys):
    _spent(path)
    _sql(path, edit)
    with pytest.raises(ValueError, match="not the ones sealed with the head"):
        open_budget(path, dataset="d")  # before: remaining 1.0, and spent again
    assert main(["budget", "verify", str(path)]) == 1
    assert "FAILED" in capsys.readouterr().err


def test_a_plain_sql_rollback_of_the_newest_charges_is_refused(path, capsys):
    # delete the newest charges and point meta and the dataset row at an older one
    _spent(path, charges=2)
    _sql(
        path,
        """
        DELETE FROM charges WHERE id > 1;
        UPDATE meta SET value = (SELECT hash FROM charges WHERE id = 1) WHERE key = 'head';
        UPDATE meta SET value = '1' WHERE key = 'head_id';
        UPDATE datasets SET spent = (SELECT spent FROM charges WHERE id = 1), last = 1;
        """,
    )
    with pytest.raises(ValueError, match="sealed with the head"):
        open_budget(path, dataset="d")  # before: 0.5 to spend again
    assert main(["budget", "verify", str(path)]) == 1  # before: passed
    capsys.readouterr()


def test_a_restored_older_copy_is_refused_until_the_rollback_is_accepted(path, tmp_path, capsys):
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    budget.spend(0.25)
    backup = tmp_path / "backup.sqlite"
    shutil.copyfile(path, backup)
    budget.spend(0.75)
    shutil.copyfile(backup, path)  # before: 0.75 silently given back
    with pytest.raises(BudgetStoreError, match=r"holds 1 charge\(s\), fewer than the 2 of"):
        open_budget(path, dataset="d")
    with pytest.raises(BudgetStoreError, match=r"rolled back.*nothing was charged or drawn"):
        budget.spend(0.5)
    assert main(["budget", "verify", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "rolled back" in err and "--accept-rollback" in err
    assert main(["budget", "show", str(path)]) == 2  # one line, not a traceback
    assert "rolled back" in capsys.readouterr().err
    assert main(["budget", "verify", str(path), "--accept-rollback"]) == 0
    assert "rollback accepted" in capsys.readouterr().out
    assert open_budget(path, dataset="d").remaining == 0.75  # deliberately given back
    assert _witness(path)["charges"] == 1


def test_a_restored_copy_with_another_history_is_refused(path, tmp_path, monkeypatch):
    # The store's charge at the witness's count has another hash: a restored copy charged
    # past the witness out of its sight (here, with the witnesses kept elsewhere meanwhile).
    watched, unwatched = tmp_path / "watched", tmp_path / "unwatched"
    monkeypatch.setenv(_store_witness.WITNESS_DIR_ENV, str(watched))
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    budget.spend(0.25)
    backup = tmp_path / "backup.sqlite"
    shutil.copyfile(path, backup)
    budget.spend(0.5)
    assert [w.suffix for w in watched.iterdir()] == [".witness"]  # <store id>.witness
    assert not path.with_name(path.name + ".witness").exists()
    shutil.copyfile(backup, path)
    monkeypatch.setenv(_store_witness.WITNESS_DIR_ENV, str(unwatched))
    open_budget(path, dataset="d").spend(0.125)  # charges #2 and #3, unseen
    open_budget(path, dataset="d").spend(0.125)
    monkeypatch.setenv(_store_witness.WITNESS_DIR_ENV, str(watched))
    with pytest.raises(BudgetStoreError, match="has another charge #2 than its witness"):
        open_budget(path, dataset="d")


def test_a_replaced_store_is_refused(path, tmp_path):
    _spent(path, charges=1)
    other = tmp_path / "other.sqlite"
    dpfit.Budget.open(other, dataset="d", rho=1.0)
    shutil.copyfile(other, path)  # before: a fresh budget of 1.0 at the same path
    with pytest.raises(BudgetStoreError, match=r"another store .*its witness"):
        open_budget(path, dataset="d")


def test_a_failing_witness_write_never_loses_a_charge(path, monkeypatch):
    # Fault injection: every write of the witness fails (a full disk, a read-only
    # directory). Each charge, reservation and refund stands; a warning says that a rollback
    # cannot be detected; once the witness can be written again it catches up.
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)

    def failing(src, dst):
        raise OSError(28, "No space left on device (injected)")

    monkeypatch.setattr(_store_witness, "_replace", failing)
    with pytest.warns(BudgetStoreWarning, match="witness .* could not be written"):
        budget.spend(0.25)
    with pytest.warns(BudgetStoreWarning, match="witness .* could not be written"):
        with budget.reserve(0.5, mechanism="fit"):  # the charge and its refund row
            budget.spend(0.125)
    assert [c.rho for c in budget.history()] == [0.25, 0.5, -0.375]
    assert budget.spent == 0.375 and verify_store(path).rows == 3
    assert _witness(path)["charges"] == 0  # still the creation's
    monkeypatch.undo()
    budget.spend(0.125)
    assert _witness(path)["charges"] == 4 and budget.spent == 0.5
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temporaries


def test_a_missing_witness_is_started_at_the_next_charge(path):
    budget = _spent(path, charges=2)
    path.with_name(path.name + ".witness").unlink()  # a store from before witnesses
    assert open_budget(path, dataset="d").spent == 1.0
    verify_store(path)
    budget = dpfit.Budget.open(path.with_name("b2.sqlite"), dataset="d", rho=1.0)
    budget.spend(0.5)
    assert _witness(budget.path)["charges"] == 1


def test_a_damaged_witness_is_refused_until_accepted(path):
    _spent(path, charges=1)
    path.with_name(path.name + ".witness").write_text("{not json")
    with pytest.raises(BudgetStoreError, match="is not a dpfit budget witness"):
        open_budget(path, dataset="d")
    verify_store(path, accept_rollback=True)
    assert open_budget(path, dataset="d").spent == 1.0


def test_the_witness_never_moves_backwards(path):
    budget = _spent(path, charges=4)
    store_id = _witness(path)["store_id"]
    _store_witness.write_witness(path, store_id, 1, "older")
    assert _witness(path)["charges"] == 4
    assert budget.remaining == 0.0


def test_a_new_store_at_a_path_replaces_a_stale_witness(path):
    _spent(path, charges=2)
    path.unlink()  # the store deleted, its witness left behind
    budget = dpfit.Budget.open(path, dataset="d", rho=2.0)  # a new store on first use
    budget.spend(0.5)
    assert budget.spent == 0.5 and _witness(path)["charges"] == 1


def test_a_store_sealed_before_is_fully_checked_and_sealed_at_its_next_charge(path):
    # A store written before the seal (no 'state' in meta) passes the full check instead,
    # and its next charge seals it; the full check still refuses a dataset row set back.
    budget = _spent(path, charges=2)
    _sql(path, "DELETE FROM meta WHERE key = 'state'")
    assert open_budget(path, dataset="d").spent == 1.0
    other = dpfit.Budget.open(path, dataset="e", rho=1.0)  # adding a dataset seals too
    other.spend(0.5)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM meta WHERE key = 'state'").fetchone()[0] == 1
    _sql(path, "DELETE FROM meta WHERE key = 'state'; UPDATE datasets SET spent = '0', "
               "last = NULL WHERE name = 'd'")  # fmt: skip
    with pytest.raises(ValueError, match="running total of dataset 'd' is not the sum"):
        budget.remaining  # noqa: B018 - the read is the check
