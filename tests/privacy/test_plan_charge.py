"""A release plan charged as one ledger entry: spent up front, drawn in order, refused when a
release is not the plan's next, refunded exactly when the run fails."""

import pickle

import numpy as np
import pytest

import dpfit
from dpfit.mechanisms import gaussian, gaussian_releases, make_noise_source
from dpfit.mechanisms.plan import ReleasePlan, charge_plan, planned_release
from dpfit.privacy import GaussianEntry, PrivacyLedger, Query, Relation
from dpfit.privacy.entries import ComposedEntry, ReservedEntry
from dpfit.testing import recording

N = 100
R = Relation.REPLACE_ONE


def _plan(run_time: bool = False) -> ReleasePlan:
    common = {"n": N, "relation": R, "purpose": "test"}
    releases = (
        planned_release("a", 0.25, Query.MEAN, 1.0, label="t/a", **common),
        planned_release(
            "b", 0.5, Query.MEAN, None if run_time else 2.0, label="t/b", count=4, **common
        ),
        planned_release("c", 0.25, Query.BOUNDED_MEAN, 1.0, label="t/c", **common),
    )
    return ReleasePlan(label="test", rho=1.0, relation=R, n=N, releases=releases)


def _draw(plan: ReleasePlan, ledger: PrivacyLedger, source, *, b_bound: float = 2.0) -> None:
    a, c = plan.release("a"), plan.release("c")
    b = plan.bound("b", b_bound)
    gaussian(np.zeros(2), sensitivity=a.sensitivity, noise_std=a.noise_std, ledger=ledger,
             rng=source, label=a.label)  # fmt: skip
    with gaussian_releases(count=4, sensitivity=b.sensitivity, noise_std=b.noise_std,
                           ledger=ledger, rng=source, label=b.label) as releases:  # fmt: skip
        for _ in range(4):
            releases.release(np.zeros(2))
    gaussian(np.zeros(1), sensitivity=c.sensitivity, noise_std=c.noise_std, ledger=ledger,
             rng=source, label=c.label)  # fmt: skip


def test_the_plan_is_spent_up_front_as_one_entry_and_drawn_in_order():
    budget = dpfit.Budget(rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    plan = _plan()
    a = plan.release("a")
    with charge_plan(plan, ledger) as charge:
        assert budget.spent == ledger.rho == 0.0 and not charge.charged  # inputs read first
        with recording() as rec:
            gaussian(np.zeros(2), sensitivity=a.sensitivity, noise_std=a.noise_std,
                     ledger=ledger, rng=make_noise_source(1), label=a.label)  # fmt: skip
            assert budget.spent == ledger.rho == plan.composed().rho  # the whole plan
        assert len(rec) == 1
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=1.0))
    with charge_plan(plan, ledger) as charge:
        _draw(plan, ledger, make_noise_source(0))
    budget = ledger.budget
    (entry,) = ledger.entries
    assert isinstance(entry, ComposedEntry) and entry is charge.entry
    assert [e.label for e in ledger.releases] == ["t/a", "t/b", "t/c"]
    assert entry.components == plan.composed().components  # drawn exactly as planned
    assert budget.spent == ledger.rho <= 1.0
    assert ledger.is_gaussian_only and ledger.gaussian_epsilon(1e-5) is not None


def test_a_release_outside_the_plan_is_refused_before_its_noise_is_drawn():
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=1.0))
    plan = _plan()
    source = make_noise_source(0)
    with recording() as rec, pytest.raises(RuntimeError, match="not the next release"):
        with charge_plan(plan, ledger):
            gaussian(np.zeros(1), sensitivity=1.0, noise_std=1e-3, ledger=ledger, rng=source,
                     label="t/a")  # the planned label, but more than its share  # fmt: skip
    assert len(rec) == 0
    assert ledger.rho == 0.0 and ledger.budget.spent == 0.0  # nothing was drawn: refunded


def test_a_failed_run_keeps_only_what_it_drew():
    budget = dpfit.Budget(rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    plan = _plan()
    source = make_noise_source(0)
    a = plan.release("a")
    with pytest.raises(KeyError), charge_plan(plan, ledger):
        gaussian(np.zeros(1), sensitivity=a.sensitivity, noise_std=a.noise_std, ledger=ledger,
                 rng=source, label=a.label)  # fmt: skip
        raise KeyError("a failure outside the data (a lost worker)")
    (entry,) = ledger.entries
    assert entry.components == (plan.composed().components[0],)
    assert budget.spent == ledger.rho == entry.components[0].rho


def test_a_reserved_share_is_replaced_by_the_release_drawn_and_the_rest_returned():
    budget = dpfit.Budget(rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    plan = _plan(run_time=True)
    assert isinstance(plan.composed().components[1], ReservedEntry)
    assert "run time" in str(plan)
    with charge_plan(plan, ledger):
        _draw(plan, ledger, make_noise_source(0), b_bound=0.7)
    (entry,) = ledger.entries
    drawn = entry.components[1]
    assert isinstance(drawn, GaussianEntry) and drawn.count == 4 and drawn.rho <= 0.5
    assert budget.spent == ledger.rho  # exact: the difference went back to the budget


def test_a_reserved_share_never_drawn_stays_charged_and_is_stated():
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=1.0))
    plan = _plan(run_time=True)
    a = plan.release("a")
    with charge_plan(plan, ledger):  # the run stops early without a failure
        gaussian(np.zeros(1), sensitivity=a.sensitivity, noise_std=a.noise_std, ledger=ledger,
                 rng=make_noise_source(0), label=a.label)  # fmt: skip
    assert ledger.rho == pytest.approx(1.0, rel=1e-15)
    assert "reserved for 4 planned Gaussian release(s) that were not drawn" in ledger.statement()


def test_plans_do_not_nest_and_an_open_plan_does_not_travel_in_a_pickle():
    ledger = PrivacyLedger()
    with charge_plan(_plan(), ledger):
        with pytest.raises(RuntimeError, match="do not nest"):
            charge_plan(_plan(), ledger)
        copy = pickle.loads(pickle.dumps(ledger))
        copy.charge(GaussianEntry(label="x", sensitivity=1.0, noise_std=10.0))  # no plan
    assert [e.label for e in copy.entries] == ["x"]  # the plan, never drawn, was not charged


def test_a_budget_that_cannot_pay_the_plan_refuses_it_whole_before_the_first_draw():
    budget = dpfit.Budget(rho=0.9)
    ledger = PrivacyLedger(budget=budget)
    with recording() as rec, pytest.raises(dpfit.BudgetExceededError), charge_plan(
        _plan(), ledger
    ):
        _draw(_plan(), ledger, make_noise_source(0))
    assert budget.spent == 0.0 and len(ledger) == 0 and len(rec) == 0


def test_an_input_refused_before_the_first_release_charges_nothing():
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=1.0))
    with pytest.raises(ValueError), charge_plan(_plan(), ledger):
        raise ValueError("a value the reader cannot parse")  # checked before any release
    assert len(ledger) == 0 and ledger.budget.spent == 0.0


def test_a_failure_inside_a_counted_release_keeps_the_draws_made():
    budget = dpfit.Budget(rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    plan = _plan()
    a, b = plan.release("a"), plan.release("b")
    source = make_noise_source(0)
    with pytest.raises(OSError), charge_plan(plan, ledger):
        gaussian(np.zeros(1), sensitivity=a.sensitivity, noise_std=a.noise_std, ledger=ledger,
                 rng=source, label=a.label)  # fmt: skip
        with gaussian_releases(count=4, sensitivity=b.sensitivity, noise_std=b.noise_std,
                               ledger=ledger, rng=source, label=b.label) as releases:  # fmt: skip
            releases.release(np.zeros(1))
            releases.release(np.zeros(1))
            raise OSError("a lost worker after two of four steps")
    (entry,) = ledger.entries
    assert [(e.label, e.count) for e in entry.components] == [("t/a", 1), ("t/b", 2)]
    assert budget.spent == ledger.rho == pytest.approx(0.25 + 0.25, rel=1e-12)


def test_a_failed_spend_of_a_drawn_reserved_release_returns_its_share_once(monkeypatch):
    """Settling a reserved release exchanges the reservation for the release drawn; when
    that exchange fails (a full disk) nothing is drawn and closing the plan returns the
    reservation once (twice, the budget would show room it does not have)."""
    budget = dpfit.Budget(rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    plan = _plan(run_time=True)
    a = plan.release("a")
    source = make_noise_source(0)

    def failing_exchange(self, back, take, *, label):
        raise OSError("the store could not be written")

    with recording() as rec, pytest.raises(OSError), charge_plan(plan, ledger):
        gaussian(np.zeros(1), sensitivity=a.sensitivity, noise_std=a.noise_std, ledger=ledger,
                 rng=source, label=a.label)  # fmt: skip
        monkeypatch.setattr(dpfit.Budget, "_exchange", failing_exchange)
        b = plan.bound("b", 0.7)
        wider = 1.5 * b.noise_std  # costs less than reserved: the difference goes back
        with gaussian_releases(count=4, sensitivity=b.sensitivity, noise_std=wider,
                               ledger=ledger, rng=source, label=b.label) as releases:  # fmt: skip
            releases.release(np.zeros(2))
    assert len(rec) == 1  # only the first release was drawn
    assert budget.spent == ledger.rho == pytest.approx(a.rho, rel=1e-12)  # what was drawn, once


def test_a_plan_belongs_to_its_thread_and_other_threads_charge_as_usual():
    # a plan used to belong to the ledger: while one was open, another thread's release was
    # refused as "not the next release of the plan", and a second plan as "do not nest"
    import threading

    budget = dpfit.Budget(rho=3.0)
    ledger = PrivacyLedger(budget=budget)
    opened, other_done = threading.Event(), threading.Event()
    errors = []

    def planned(seed: int, wait: bool) -> None:
        try:
            plan = _plan()
            with charge_plan(plan, ledger):
                if wait:  # hold the plan open, half drawn, while the others run
                    a = plan.release("a")
                    gaussian(np.zeros(2), sensitivity=a.sensitivity, noise_std=a.noise_std,
                             ledger=ledger, rng=make_noise_source(seed), label=a.label)  # fmt: skip
                    opened.set()
                    assert other_done.wait(30)
                    b, c = plan.bound("b", 2.0), plan.release("c")
                    with gaussian_releases(count=4, sensitivity=b.sensitivity,
                                           noise_std=b.noise_std, ledger=ledger,
                                           rng=make_noise_source(seed),
                                           label=b.label) as releases:  # fmt: skip
                        for _ in range(4):
                            releases.release(np.zeros(2))
                    gaussian(np.zeros(1), sensitivity=c.sensitivity, noise_std=c.noise_std,
                             ledger=ledger, rng=make_noise_source(seed), label=c.label)  # fmt: skip
                else:
                    _draw(plan, ledger, make_noise_source(seed))
        except BaseException as exc:
            errors.append(exc)

    first = threading.Thread(target=planned, args=(0, True))
    first.start()
    assert opened.wait(30)
    gaussian(np.zeros(1), sensitivity=1.0, noise_std=10.0, ledger=ledger,
             rng=make_noise_source(1), label="other")  # fmt: skip
    second = threading.Thread(target=planned, args=(2, False))
    second.start()
    second.join(30)
    other_done.set()
    first.join(30)
    assert errors == []
    labels = [e.label for e in ledger.entries]
    assert sorted(labels) == ["other", "test", "test"]
    assert [e.label for e in ledger.releases].count("t/b") == 2
    assert budget.spent == ledger.rho <= 3.0
