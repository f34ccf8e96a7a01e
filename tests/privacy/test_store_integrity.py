"""The budget store never forgets: empty files refused, atomic creation, refunds tied to their
charge, a hash chain that catches edits and damage, constant-time charges, migration.

Before the fix, a truncated (0-byte) store became a new empty one, 59 of 320 threads
creating one store on first use failed, a store replaced mid-fit received the fit's refund,
4 of 300 single-bit flips gave more budget, an ``UPDATE`` from the sqlite3 shell went
unnoticed, and every charge re-summed the whole history.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sqlite3
import threading
import time

import numpy as np
import pytest

import dpfit
from dpfit import BudgetExceededError
from dpfit.cli import main
from dpfit.exceptions import BudgetStoreError, BudgetStoreWarning
from dpfit.mechanisms import gaussian, gaussian_releases, make_noise_source
from dpfit.privacy import PrivacyLedger, _store_file, open_budget
from dpfit.privacy._store_chain import append, dataset_state
from dpfit.privacy.store import verify_store


@pytest.fixture
def path(tmp_path):
    return tmp_path / "budget.sqlite"


def _sql(path, statement, *args):
    with sqlite3.connect(path) as conn:  # as from the sqlite3 shell
        conn.execute(statement, args)


# -- empty and missing files, creation ----------------------------------------------------


def test_an_empty_file_is_refused_unless_explicitly_created(path, capsys):
    path.write_bytes(b"")  # : > budget.sqlite
    assert main(["budget", "show", str(path)]) == 2
    assert "empty file (0 bytes)" in capsys.readouterr().err
    for call in (
        lambda: dpfit.Budget.open(path, dataset="d", rho=1.0),
        lambda: open_budget(path, dataset="d"),
    ):
        with pytest.raises(ValueError, match=r"empty file \(0 bytes\): a truncated store"):
            call()
    assert path.stat().st_size == 0  # refused, not rewritten
    assert main(["budget", "create", str(path), "--dataset", "d", "--rho", "1"]) == 0
    assert open_budget(path, dataset="d").remaining == 1.0
    missing = path.with_name("missing.sqlite")
    with pytest.raises(ValueError, match="does not exist"):
        open_budget(missing, dataset="d")
    assert not missing.exists()
    assert dpfit.Budget.open(missing, dataset="d", rho=1.0).remaining == 1.0  # first use


def test_creating_one_new_store_on_first_use_is_atomic(tmp_path):
    # 10 rounds of 16 threads, and 2 rounds of 16 forked processes, open one new store with
    # rho at once: every call succeeds and there is one store with one total.
    failures = []
    for round_ in range(10):
        path = tmp_path / f"t{round_}.sqlite"
        barrier = threading.Barrier(16, timeout=60)

        def first_use(path=path, barrier=barrier):
            barrier.wait()
            try:
                dpfit.Budget.open(path, dataset="d", rho=1.0).spend(0.0625)
            except Exception as exc:  # every failure is counted
                failures.append(exc)

        threads = [threading.Thread(target=first_use) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert open_budget(path, dataset="d").spent == 1.0
    codes = []
    for round_ in range(2 if hasattr(os, "fork") else 0):
        path, start = tmp_path / f"p{round_}.sqlite", time.time() + 0.5
        pids = []
        for _ in range(16):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    while time.time() < start:
                        time.sleep(0.001)
                    dpfit.Budget.open(path, dataset="d", rho=1.0).spend(0.0625)
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
        codes += [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        assert open_budget(path, dataset="d").spent == 1.0
    assert failures == [] and codes == [0] * len(codes)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


# -- refunds tied to their charge -----------------------------------------------------------


def test_a_store_replaced_mid_fit_gets_no_refund(path, tmp_path):
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    fresh = tmp_path / "fresh.sqlite"
    dpfit.Budget.open(fresh, dataset="d", rho=1.0)
    with pytest.warns(BudgetStoreWarning, match=r"another.*identity.*stays charged"):
        with budget.reserve(0.5, mechanism="fit"):
            budget.spend(0.125)
            shutil.copyfile(fresh, path)  # the store is replaced while the fit runs
    with pytest.raises(BudgetStoreError, match=r"another store .*its witness"):
        open_budget(path, dataset="d")  # the witness saw the old store (before: 1.0 to spend)
    verify_store(path, accept_rollback=True)  # replaced on purpose
    replaced = open_budget(path, dataset="d")
    assert replaced.spent == 0.0 and replaced.history() == []  # no refund, no releases
    assert replaced.remaining == 1.0  # (before: 1.0835 of 1.0 could be spent)


def test_a_restored_backup_keeps_its_own_charges(path, tmp_path):
    # A backup taken after charge #1, restored while a fit holds charge #2: the fit's refund
    # would have cancelled part of the backup's own later charge #2 (a different row).
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    budget.spend(0.25)
    backup = tmp_path / "backup.sqlite"
    shutil.copyfile(path, backup)
    with pytest.warns(BudgetStoreWarning, match=r"charge #2 is no longer in the store"):
        with budget.reserve(0.5, mechanism="fit"):
            budget.spend(0.125)
            shutil.copyfile(backup, path)
            verify_store(path, accept_rollback=True)  # restored on purpose (else refused)
            open_budget(path, dataset="d").spend(0.1)  # the restored store's own charge #2
    assert [c.rho for c in budget.history()] == [0.25, 0.1]
    assert verify_store(path).rows == 2


def test_an_interrupted_fit_on_a_replaced_store_gets_no_refund(path, tmp_path):
    # Direct charges (no reservation): DP-GD-like releases charged at once, then a failure;
    # the refund of the undrawn releases goes only to the charge that paid for them.
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    source = make_noise_source(0)
    with pytest.raises(KeyboardInterrupt):
        with gaussian_releases(count=8, sensitivity=1.0, noise_std=4.0, ledger=ledger,
                               rng=source, label="step") as releases:  # fmt: skip
            releases.release(0.0)
            raise KeyboardInterrupt
    assert budget.spent == pytest.approx(1 / 32) and budget.history()[-1].refund_of == 1
    fresh = tmp_path / "fresh.sqlite"
    dpfit.Budget.open(fresh, dataset="d", rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    with pytest.warns(BudgetStoreWarning, match="another store identity"):
        with pytest.raises(KeyboardInterrupt):
            with gaussian_releases(count=8, sensitivity=1.0, noise_std=4.0, ledger=ledger,
                                   rng=source, label="step") as releases:  # fmt: skip
                releases.release(0.0)
                shutil.copyfile(fresh, path)
                verify_store(path, accept_rollback=True)  # replaced on purpose (else refused)
                raise KeyboardInterrupt
    assert open_budget(path, dataset="d").spent == 0.0


def test_a_refund_never_returns_more_than_its_charge(path):
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    gaussian(0.0, sensitivity=1.0, noise_std=2.0, ledger=ledger, rng=make_noise_source(1),
             label="one")  # fmt: skip
    with pytest.warns(BudgetStoreWarning, match="no charge this thread made paid for them"):
        budget._refund(0.25, count=2, label="bigger than any charge")
    budget._refund(0.125, count=1, label="ok")
    with pytest.warns(BudgetStoreWarning, match="no more than that left to refund"):
        budget._refund(0.125, count=1, label="twice")
    assert budget.spent == 0.0 and verify_store(path).rows == 2


# -- tampering and damage -----------------------------------------------------------------


def _spent_store(path):
    """A store with total 1.0 and 0.9 spent: direct charges, a reservation, a refund."""
    budget = dpfit.Budget.open(path, dataset="d", rho=1.0)
    budget.spend(0.25)
    with budget.reserve(0.5, mechanism="fit"):  # 0.25 of it spent, 0.25 refunded
        ledger = PrivacyLedger(budget=budget)
        gaussian(np.zeros(3), sensitivity=1.0, noise_std=2.0, ledger=ledger,
                 rng=make_noise_source(2), label="mean")  # fmt: skip
        budget.spend(0.125)
    budget.spend(0.375)
    budget.spend(0.025)
    assert budget.spent == pytest.approx(0.9)
    dpfit.Budget.open(path, dataset="other", rho=2.0).spend(0.5)
    return budget


@pytest.mark.parametrize(
    "statement, caught_by_spend",
    [
        ("UPDATE charges SET rho = 0.0001 WHERE id = (SELECT max(id) FROM charges "
         "WHERE dataset = 'd')", True),
        ("UPDATE datasets SET total = 5 WHERE name = 'd'", True),
        ("UPDATE datasets SET spent = '0' WHERE name = 'd'", True),
        ("DELETE FROM charges WHERE id = (SELECT max(id) FROM charges)", True),
        ("UPDATE charges SET rho = 0.0001 WHERE id = 1", False),  # older rows: verify only
        ("DELETE FROM charges WHERE id = 2", False),
        ("UPDATE charges SET mechanism = 'x' WHERE id = 1", False),
    ],
)  # fmt: skip
def test_an_edit_from_the_sqlite_shell_is_detected(path, capsys, statement, caught_by_spend):
    budget = _spent_store(path)
    _sql(path, statement)
    if caught_by_spend:
        with pytest.raises(ValueError, match="failed its integrity check"):
            budget.spend(0.05)
    else:  # the running total still decides, so no edit of an old row gives more budget
        with pytest.raises(BudgetExceededError):
            budget.spend(0.2)
    capsys.readouterr()
    assert main(["budget", "verify", str(path)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "FAILED" in out.err


def test_verify_reports_a_sound_store(path, capsys):
    _spent_store(path)
    assert main(["budget", "verify", str(path)]) == 0
    assert "ok, 6 charges over 2 dataset(s)" in capsys.readouterr().out
    assert main(["budget", "verify", str(path.with_name("none.sqlite"))]) == 1


def test_single_bit_flips_never_give_more_budget(path, tmp_path):
    # 300 seeded single-bit flips in the bytes that hold something (the non-zero ones: the
    # rows, the page headers): spending 0.2 more (0.1 is left) must fail every time, by the
    # budget or by a refusal of the damaged file (before: 3 of these 300 flips gave more).
    _spent_store(path)
    raw = path.read_bytes()
    filled = [i for i, byte in enumerate(raw) if byte]
    flipped = tmp_path / "flipped.sqlite"
    gen = np.random.default_rng(7)
    gave_more = []
    for trial in range(300):
        data = bytearray(raw)
        byte, bit = filled[int(gen.integers(len(filled)))], int(gen.integers(8))
        data[byte] ^= 1 << bit
        flipped.write_bytes(bytes(data))
        try:
            open_budget(flipped, dataset="d").spend(0.2)
            gave_more.append((trial, byte, bit))
        except (ValueError, BudgetStoreError, sqlite3.DatabaseError):
            pass
    assert gave_more == []


# -- constant-time charges ------------------------------------------------------------------


def _grow(path, rows: int) -> None:
    """Append ``rows`` chained charges of 1e-9 in one transaction (fast set-up)."""
    with _store_file.transaction(path) as conn:
        state = dataset_state(conn, path, "d")
        for _ in range(rows):
            receipt = append(conn, state, dataset="d", rho=1e-9, mechanism="grow", pid=0)
            units = state.units + dpfit.privacy.budget.exact_units(1e-9)
            state = dataclasses.replace(state, units=units, head=receipt.hash, head_id=receipt.id)


def test_a_charge_does_the_same_work_whatever_the_history(path, monkeypatch):
    # SQLite's virtual-machine instructions per spend, counted by a progress handler: the
    # same at 100 and 20,000 rows (before: every charge re-summed the whole history).
    dpfit.Budget.open(path, dataset="d", rho=1.0)
    counted = [0]
    plain = _store_file._sqlite_connect

    def counting(*args, **kwargs):
        conn = plain(*args, **kwargs)
        conn.set_progress_handler(lambda: counted.__setitem__(0, counted[0] + 1) or 0, 100)
        return conn

    def work(rows: int) -> int:
        _grow(path, rows)
        budget = open_budget(path, dataset="d")
        monkeypatch.setattr(_store_file, "_sqlite_connect", counting)
        counted[0] = 0
        budget.spend(1e-9)
        monkeypatch.setattr(_store_file, "_sqlite_connect", plain)
        return counted[0]

    small, large = work(100), work(19_900)
    assert large <= 1.2 * small + 2
    assert verify_store(path).rows == 20_002


# -- format versions ---------------------------------------------------------------------------

_V1 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE datasets (name TEXT PRIMARY KEY, total REAL NOT NULL CHECK (total > 0), "
    "created TEXT NOT NULL)",
    "CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT NOT NULL "
    "REFERENCES datasets (name), rho REAL NOT NULL, mechanism TEXT NOT NULL, created TEXT "
    "NOT NULL, pid INTEGER NOT NULL)",
    "CREATE TABLE releases (charge INTEGER NOT NULL REFERENCES charges (id), mechanism TEXT "
    "NOT NULL, count INTEGER NOT NULL, rho REAL NOT NULL)",
)


def test_a_version_1_store_is_refused_with_a_hint_and_migrates(path, capsys):
    with sqlite3.connect(path) as conn:
        for statement in _V1:
            conn.execute(statement)
        conn.executemany("INSERT INTO meta VALUES (?, ?)",
                         [("format", "dpfit-budget-store"), ("version", "1")])  # fmt: skip
        conn.execute("INSERT INTO datasets VALUES ('d', 1.0, '2025-01-01T00:00:00Z')")
        conn.executemany(
            "INSERT INTO charges (dataset, rho, mechanism, created, pid) VALUES (?,?,?,?,?)",
            [("d", 0.5, "fit", "2025-01-01T00:00:01Z", 7),
             ("d", -0.125, "refund: the unspent part of charge 1", "2025-01-01T00:00:02Z", 7),
             ("d", 0.25, "direct spend", "2025-01-01T00:00:03Z", 8)],
        )  # fmt: skip
        conn.execute("INSERT INTO releases VALUES (1, 'dp_gd/gradient', 100, 0.375)")
    with pytest.raises(ValueError, match=r"version 1.*run dpfit budget migrate"):
        open_budget(path, dataset="d")
    assert main(["budget", "migrate", str(path)]) == 0
    assert "3 charges migrated" in capsys.readouterr().out
    budget = open_budget(path, dataset="d")
    assert [(c.id, c.rho, c.mechanism, c.created, c.pid) for c in budget.history()] == [
        (1, 0.5, "fit", "2025-01-01T00:00:01Z", 7),
        (2, -0.125, "refund: the unspent part of charge 1", "2025-01-01T00:00:02Z", 7),
        (3, 0.25, "direct spend", "2025-01-01T00:00:03Z", 8),
    ]
    assert budget.history()[0].releases == (("dp_gd/gradient", 100, 0.375),)
    assert budget.spent == 0.625 and verify_store(path).rows == 3
    budget.spend(0.375)
    assert budget.remaining == 0.0
    assert path.with_name(path.name + ".v1.bak").exists()
    assert main(["budget", "migrate", str(path)]) == 2  # already version 2
    assert "not a version 1" in capsys.readouterr().err
