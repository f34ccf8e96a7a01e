"""A parallel composition inside a release plan: paid by the plan's one entry, each block's
releases matched to the planned block before their noise is drawn, the composition drawn put
in the plan's place with the difference returned exactly."""

import numpy as np
import pytest

import dpfit
from dpfit.mechanisms import gaussian, make_noise_source
from dpfit.mechanisms.plan import (
    PlannedParallel,
    PlannedRelease,
    ReleasePlan,
    charge_plan,
    planned_release,
)
from dpfit.privacy import PrivacyLedger, Query, Relation
from dpfit.privacy.entries import ComposedEntry
from dpfit.testing import recording

R = Relation.REPLACE_ONE
N = 100


def _plan(repeats: int = 3) -> ReleasePlan:
    common = {"n": N, "relation": R, "purpose": "test"}
    counts = planned_release("counts", 0.5, Query.MEAN, 1.0, label="p/counts", **common)
    mean = PlannedRelease(name="mean", label="p/mean", query=Query.MEAN, rho=0.5, count=1,
                          bound=None, sensitivity=None, noise_std=None, purpose="test")  # fmt: skip
    blocks = PlannedParallel(name="blocks", label="p", rho=1.0, pattern=((counts, mean),),
                             repeats=repeats, purpose="test")  # fmt: skip
    check = planned_release("check", 0.25, Query.COUNT, 1.0, label="p/check", **common)
    return ReleasePlan(label="test", rho=1.25, relation=R, n=N, releases=(blocks, check))


def _block(plan, block, source, *, clip: float, label: str = "p/mean") -> None:
    counts = plan.releases[0].pattern[0][0]
    gaussian(np.zeros(2), sensitivity=counts.sensitivity, noise_std=counts.noise_std,
             ledger=block, rng=source, label="p/counts")  # fmt: skip
    sens = 2.0 * clip / N
    gaussian(np.zeros(2), sensitivity=sens, noise_std=sens, ledger=block, rng=source,
             label=label)  # fmt: skip


def _check(plan, ledger, source) -> None:
    check = plan.release("check")
    gaussian(np.zeros(1), sensitivity=check.sensitivity, noise_std=check.noise_std,
             ledger=ledger, rng=source, label="p/check")  # fmt: skip


def test_a_planned_composition_is_paid_up_front_and_replaced_by_the_one_drawn():
    budget = dpfit.Budget(rho=2.0)
    ledger = PrivacyLedger(budget=budget)
    plan, source = _plan(), make_noise_source(0)
    with charge_plan(plan, ledger):
        with ledger.parallel("p", rho_per_block=1.0) as blocks:
            assert budget.spent == pytest.approx(1.25)  # the whole plan, before any draw
            for clip in (1.0, 2.0, 2.0):
                _block(plan, blocks.block(), source, clip=clip)
        _check(plan, ledger, source)
    (entry,) = ledger.entries
    assert isinstance(entry, ComposedEntry) and entry.label == "test"
    drawn, check = entry.components
    assert drawn.label == "p" and drawn.n_blocks == 3 and check.label == "p/check"
    assert [len(block) for block, _ in drawn.blocks] == [2, 2]  # two clips: two layouts
    assert drawn.counts == {"p/counts": 3, "p/mean": 3}
    # each mean drawn costs 1/2 (noise = sensitivity) <= the reserved 0.5: rho as planned
    assert budget.spent == ledger.rho == entry.rho


def test_a_block_release_the_plan_did_not_plan_is_refused_before_its_draw():
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=2.0))
    plan, source = _plan(), make_noise_source(0)
    with recording() as rec, pytest.raises(RuntimeError, match="not the next release"):
        with charge_plan(plan, ledger), ledger.parallel("p", rho_per_block=1.0) as blocks:
            _block(plan, blocks.block(), source, clip=1.0, label="p/other")
    assert [r.entry.label for r in rec.releases] == ["p/counts"]  # the refused one: no noise
    assert ledger.budget.spent == ledger.rho  # what was not drawn went back


def test_a_block_beyond_the_plan_is_refused():
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=2.0))
    plan, source = _plan(repeats=1), make_noise_source(0)
    with pytest.raises(RuntimeError, match="a block outside the plan"):
        with charge_plan(plan, ledger), ledger.parallel("p", rho_per_block=1.0) as blocks:
            _block(plan, blocks.block(), source, clip=1.0)
            blocks.block()
    assert ledger.budget.spent == ledger.rho == ledger.entries[0].components[0].rho


@pytest.mark.parametrize("label, cap", [("q", 1.0), ("p", 1.5)])
def test_a_composition_that_is_not_the_plans_next_is_refused(label, cap):
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=2.0))
    with pytest.raises(RuntimeError, match="not the next release"):
        with charge_plan(_plan(), ledger):
            ledger.parallel(label, rho_per_block=cap)
    assert ledger.budget.spent == 0.0 and len(ledger) == 0


def test_a_run_that_fails_inside_a_block_keeps_what_it_drew():
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=2.0))
    plan, source = _plan(), make_noise_source(0)
    with pytest.raises(ZeroDivisionError):
        with charge_plan(plan, ledger), ledger.parallel("p", rho_per_block=1.0) as blocks:
            _block(plan, blocks.block(), source, clip=1.0)
            block = blocks.block()
            counts = plan.releases[0].pattern[0][0]
            gaussian(np.zeros(2), sensitivity=counts.sensitivity, noise_std=counts.noise_std,
                     ledger=block, rng=source, label="p/counts")  # fmt: skip
            raise ZeroDivisionError  # the run fails inside its second block
    (entry,) = ledger.entries
    (drawn,) = entry.components  # the check was never drawn: returned
    assert drawn.counts == {"p/counts": 2, "p/mean": 1}
    assert ledger.budget.spent == ledger.rho == drawn.rho
