"""A release plan's budget steps: a planned release replaced by the one drawn is one exchange
on the budget (no other thread can take the share in between), and a planned parallel
composition is charged a float at or above its exact cost."""

import threading

import numpy as np
import pytest

import dpfit
from dpfit.mechanisms import gaussian, gaussian_releases, make_noise_source
from dpfit.mechanisms.plan import ReleasePlan, charge_plan, planned_release
from dpfit.privacy import GaussianEntry, PrivacyLedger, Query, Relation
from dpfit.privacy._stored_budget import StoredBudget
from dpfit.privacy._units import exact_units, units_to_float
from dpfit.privacy.entries import ComposedEntry
from dpfit.privacy.parallel import ParallelEntry

N = 100
R = Relation.REPLACE_ONE


def _plan() -> ReleasePlan:
    """A release, then four whose bound is set at run time (a reserved share of 0.5)."""
    common = {"n": N, "relation": R, "purpose": "test"}
    releases = (
        planned_release("a", 0.5, Query.MEAN, 1.0, label="t/a", **common),
        planned_release("b", 0.5, Query.MEAN, None, label="t/b", count=4, **common),
    )
    return ReleasePlan(label="test", rho=1.0, relation=R, n=N, releases=releases)


def _fit(plan: ReleasePlan, ledger: PrivacyLedger, seed: int) -> None:
    """Draw the plan; ``t/b`` with twice its calibrated noise, so it costs a quarter of its
    share and the rest goes back to the budget when it is drawn."""
    source = make_noise_source(seed)
    a, b = plan.release("a"), plan.bound("b", 0.7)
    gaussian(np.zeros(1), sensitivity=a.sensitivity, noise_std=a.noise_std, ledger=ledger,
             rng=source, label=a.label)  # fmt: skip
    with gaussian_releases(count=4, sensitivity=b.sensitivity, noise_std=2 * b.noise_std,
                           ledger=ledger, rng=source, label=b.label) as releases:  # fmt: skip
        for _ in range(4):
            releases.release(np.zeros(1))


def _take_all(budget: dpfit.Budget) -> None:
    """Another thread spends everything the budget has left, and is waited for."""

    def run() -> None:
        left = budget.remaining
        if left > 0:
            budget.spend(left)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)


class _Contended(dpfit.Budget):
    """A budget shared with a thread that takes whatever is freed as soon as a step that
    frees budget lets go of the lock: the worst interleaving of racing threads."""

    def _refund(self, rho, *, count, label):
        super()._refund(rho, count=count, label=label)
        _take_all(self)

    def _exchange(self, back, take, *, label):
        super()._exchange(back, take, label=label)
        _take_all(self)


def _check_exchange_is_one_step(budget: dpfit.Budget) -> None:
    plan = _plan()
    ledger = PrivacyLedger(budget=budget)
    with charge_plan(plan, ledger):
        _fit(plan, ledger, 0)  # raised BudgetExceededError when the share was taken between
    (entry,) = ledger.entries
    assert [part.label for part in entry.components] == ["t/a", "t/b"]
    assert entry.components[1].rho == pytest.approx(0.125, rel=1e-12)


def test_a_thread_cannot_take_the_share_a_plan_frees_in_memory():
    budget = _Contended(rho=1.0)
    _check_exchange_is_one_step(budget)
    assert budget.spent == 1.0  # the 0.375 freed went to the other thread afterwards


def test_a_thread_cannot_take_the_share_a_plan_frees_from_a_stored_budget(tmp_path, monkeypatch):
    refund = StoredBudget._refund

    def contended(self, rho, *, count, label):
        refund(self, rho, count=count, label=label)
        _take_all(dpfit.Budget.open(self.path, dataset=self.dataset))

    monkeypatch.setattr(StoredBudget, "_refund", contended)
    budget = dpfit.Budget.open(tmp_path / "b.db", dataset="d", rho=2.0)
    _check_exchange_is_one_step(budget)  # direct charges: the difference is one refund row
    assert budget.spent == 2.0  # the 0.375 freed went to the other thread afterwards
    budget = dpfit.Budget.open(tmp_path / "c.db", dataset="d", rho=2.0)
    with budget.reserve(1.5, mechanism="fit") as reserved:  # a reservation's own exchange
        _check_exchange_is_one_step(reserved)
    assert budget.spent == pytest.approx(1.0 - 0.375, rel=1e-12)  # the unspent part returned


def test_racing_threads_never_fail_a_plan_that_was_paid():
    """Plans and plain spends race on one budget; every plan whose first release was drawn
    finishes, and the budget holds exactly what the ledgers and the spends hold."""
    budget = dpfit.Budget(rho=6.0)
    ledgers, failures, spent = [], [], []
    lock = threading.Lock()

    def fits(seed: int) -> None:
        for k in range(5):
            ledger = PrivacyLedger(budget=budget)
            plan = _plan()
            try:
                with charge_plan(plan, ledger):
                    _fit(plan, ledger, 10 * seed + k)
            except dpfit.BudgetExceededError:
                if len(ledger):  # refused after the plan was paid
                    failures.append(seed)
            with lock:
                ledgers.append(ledger)

    def spends() -> None:
        for _ in range(400):
            try:
                budget.spend(0.01)
            except dpfit.BudgetExceededError:
                continue
            with lock:
                spent.append(0.01)

    threads = [threading.Thread(target=fits, args=(s,)) for s in range(4)]
    threads += [threading.Thread(target=spends) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    exact = sum(ledger._units for ledger in ledgers) + exact_units(0.01) * len(spent)
    assert budget._spent_units == exact <= budget._limit


def _rounding_down_block() -> tuple[GaussianEntry, GaussianEntry]:
    """Two releases whose exact sum lies above its nearest float (found by a seeded search)."""
    gen = np.random.default_rng(0)
    while True:
        first, second = (
            GaussianEntry(label=label, sensitivity=1.0, noise_std=float(gen.uniform(0.5, 2)))
            for label in ("a", "c")
        )
        exact = first.rho_units + second.rho_units
        if exact_units(units_to_float(exact)) < exact:
            return first, second


def test_a_planned_parallel_composition_is_charged_at_least_its_exact_cost():
    first, second = _rounding_down_block()
    exact = first.rho_units + second.rho_units
    cap = units_to_float(exact) * 2
    planned = ParallelEntry(label="blocks", rho_per_block=cap, blocks=(((first, second), 3),))
    assert exact_units(planned.rho) < planned.rho_units == exact  # the nearest float is below
    composed = ComposedEntry(label="plan", components=(planned,))

    def run(budget: dpfit.Budget) -> PrivacyLedger:
        ledger = PrivacyLedger(budget=budget)
        source = make_noise_source(0)
        with ledger.charge_plan(composed), ledger.parallel("blocks", rho_per_block=cap) as blocks:
            for _ in range(3):
                block = blocks.block()
                for entry in (first, second):
                    gaussian([0.0], sensitivity=1.0, noise_std=entry.noise_std, ledger=block,
                             rng=source, label=entry.label)  # fmt: skip
        return ledger

    short = dpfit.Budget(rho=planned.rho)  # a total one rounding below the exact cost
    with pytest.raises(dpfit.BudgetExceededError):
        run(short)
    assert short.spent == 0.0
    budget = dpfit.Budget(rho=1.0)
    ledger = run(budget)
    assert ledger._units == exact <= budget._spent_units  # never charged below the exact cost
