"""Budgets across ``os.fork``: an in-memory budget refuses in a child; a stored one charges
the store, never the parent's reservation.

Before the fix, three children of a process holding ``Budget(1.0)`` each fitted at
rho = 0.5 (1.5 drawn while the parent showed 0 spent), and inside an open reservation the
store recorded nothing of what a child drew, because the parent's settlement refunded it.
Each trial forks a child that reports through its exit status (``os._exit``) and, for the
store, through the store itself.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit import BudgetExceededError
from dpfit.algorithms import dp_gd
from dpfit.exceptions import BudgetProcessError
from dpfit.privacy import Budget, GaussianEntry, PrivacyLedger, open_budget

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")

REFUSED, SPENT, OTHER = 3, 4, 5


def _in_child(action) -> int:
    """Fork; run ``action()`` in the child; return its exit status (REFUSED, SPENT, OTHER)."""
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = OTHER
        try:
            action()
            code = SPENT
        except BudgetProcessError:
            code = REFUSED
        except BaseException:  # the parent sees OTHER and fails the test
            code = OTHER
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_forked_child_cannot_spend_an_in_memory_budget():
    # 102 trials: the child's copy refuses every spend, refund and split; the parent's
    # budget is untouched and still spends.
    outcomes = []
    for trial in range(102):
        budget = Budget(rho=1.0)
        budget.spend(0.25)
        action = [
            lambda b=budget: b.spend(0.5),
            lambda b=budget: b.split(2),
            lambda b=budget: b._refund(0.25, count=1, label="x"),
        ][trial % 3]
        outcomes.append(_in_child(action))
        assert budget.spent == 0.25
        budget.spend(0.75)
    assert outcomes == [REFUSED] * 102


def test_the_refusal_says_to_use_a_stored_budget():
    budget = Budget(rho=1.0)
    message = []
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            budget.spend(0.5)
        except BudgetProcessError as exc:
            os.write(write, str(exc).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        message.append(pipe.read())
    assert "forked child" in message[0] and "dpfit.Budget.open" in message[0]
    assert isinstance(BudgetProcessError("x"), RuntimeError)


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.SideConditionWarning")
def test_forked_children_fitting_on_an_in_memory_budget_are_refused_before_drawing():
    # Three children of a process holding Budget(1.0) each fit at rho = 0.5: all refused
    # (before: 1.5 drawn, the parent showing 0 spent).
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"x": rng.uniform(0, 1, 200)})
    frame["y"] = frame["x"] + rng.normal(0, 0.1, 200)
    budget = Budget(rho=1.0)

    def fit():
        dpfit.ols(
            "y ~ x", frame, rho=0.5, budget=budget, bounds={"x": (0, 1)}, y_bounds=(-1, 3),
            clip=1.0, steps=20, precondition=False, interval=None, random_state=0,
        )  # fmt: skip

    own = Budget(rho=0.5)  # the parent fits (which also imports what a fit needs, once)
    dpfit.ols("y ~ x", frame, rho=0.5, budget=own, bounds={"x": (0, 1)}, y_bounds=(-1, 3),
              clip=1.0, steps=20, precondition=False, interval=None, random_state=0)  # fmt: skip
    assert [_in_child(fit) for _ in range(3)] == [REFUSED] * 3
    assert budget.spent == 0.0 and own.spent <= 0.5


def test_a_forked_child_charges_the_store_and_the_parents_refund_keeps_it(tmp_path):
    # 100 trials: inside the parent's reservation of 0.5, a child spends 0.25. The child
    # charges the store directly (its own row), the parent spends 0.125 of its reservation,
    # and the parent's settlement refunds only its own unspent 0.375.
    budget = open_budget(tmp_path / "b.sqlite", dataset="d", rho=1000.0)
    unrecorded = overspent = 0
    for _ in range(100):
        before = budget.spent
        with budget.reserve(0.5, mechanism="parent"):
            assert _in_child(lambda: budget.spend(0.25)) == SPENT
            budget.spend(0.125)
        recorded = budget.spent - before
        unrecorded += recorded < 0.375
        overspent += recorded > 0.375
    assert (unrecorded, overspent) == (0, 0)
    rows = budget.history()
    assert [c.rho for c in rows[:3]] == [0.5, 0.25, -0.375]
    assert rows[1].mechanism == "direct spend" and rows[1].pid != os.getpid()
    assert rows[2].refund_of == rows[0].id
    assert budget.spent == 100 * 0.375


def test_a_forked_child_is_refused_by_the_store_when_the_total_is_spent(tmp_path):
    # The child sees the reservation's charge in the store: a reservation of the whole total
    # leaves nothing for it (before, it spent from the parent's in-memory copy).
    budget = open_budget(tmp_path / "b.sqlite", dataset="d", rho=1.0)
    with budget.reserve(1.0, mechanism="parent"):

        def child():
            try:
                budget.spend(0.5)
            except BudgetExceededError:
                raise BudgetProcessError("refused by the store") from None

        assert _in_child(child) == REFUSED
        budget.spend(1.0)
    assert budget.spent == 1.0 and len(budget.history()) == 1


def test_a_forked_child_cannot_charge_the_parents_ledger():
    # A ledger without a budget is the only record of what was charged: a forked child's
    # copy refuses every charge (before: a child's fit on it was invisible in the parent's
    # statement), and the parent's ledger still charges.
    rng = np.random.default_rng(2)
    X, y = rng.uniform(-1, 1, (100, 2)), rng.uniform(-1, 1, 100)
    entry = GaussianEntry(label="x", sensitivity=1.0, noise_std=4.0)
    ledger = PrivacyLedger()
    actions = [
        lambda: ledger.charge(entry),
        lambda: dp_gd(X, y, rho=0.2, clip=1.0, steps=10, ledger=ledger, rng=0),
        lambda: ledger.parallel("blocks", rho_per_block=0.1),
    ]
    assert [_in_child(action) for action in actions] == [REFUSED] * 3
    assert len(ledger) == 0
    ledger.charge(entry)
    assert ledger.rho == entry.rho


def test_the_ledgers_refusal_says_what_to_do_instead():
    ledger = PrivacyLedger()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            ledger.charge(GaussianEntry(label="x", sensitivity=1.0, noise_std=4.0))
        except BudgetProcessError as exc:
            os.write(write, str(exc).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        message = pipe.read()
    assert "create a PrivacyLedger in this process" in message
    assert "dpfit.Budget.open" in message
