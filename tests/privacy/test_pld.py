"""PLD accounting of amplified releases, beside (never inside) the zCDP ledger."""

import itertools

import pytest

dpa = pytest.importorskip("dp_accounting")

from dpfit import BudgetExceededError  # noqa: E402
from dpfit.privacy import (  # noqa: E402
    GaussianEntry,
    PLDLedger,
    PrivacyLedger,
    SubsampledGaussianEntry,
    joint_epsilon,
    subsampled_gaussian_epsilon,
    subsampled_gaussian_noise_multiplier,
)


def _direct(events, delta, relation=None):
    relation = relation or dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    acc = dpa.pld.PLDAccountant(relation, value_discretization_interval=1e-4)
    for e in events:
        acc.compose(e)
    return acc.get_epsilon(delta)


GRID = list(itertools.product([0.01, 0.2], [0.8, 2.0], [30], [1e-5, 1e-7]))


@pytest.mark.parametrize(("q", "z", "count", "delta"), GRID)
def test_epsilon_matches_dp_accounting_pld_on_a_grid(q, z, count, delta):
    entry = SubsampledGaussianEntry(
        label="dp-sgd", sensitivity=0.5, noise_std=0.5 * z, sampling_probability=q, count=count
    )
    ledger = PLDLedger()
    ledger.charge(entry)
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), count)
    assert ledger.epsilon(delta) == pytest.approx(_direct([event], delta), abs=1e-6)


def test_two_charges_compose_like_one_composed_event():
    a = SubsampledGaussianEntry(
        label="a", sensitivity=1.0, noise_std=1.0, sampling_probability=0.05, count=20
    )
    b = SubsampledGaussianEntry(
        label="b", sensitivity=2.0, noise_std=3.0, sampling_probability=0.2, count=10
    )
    ledger = PLDLedger()
    ledger.charge(a)
    ledger.charge(b)
    direct = _direct([a.dp_event(), b.dp_event()], 1e-6)
    assert ledger.epsilon(1e-6) == pytest.approx(direct, abs=1e-6)
    assert ledger.delta(ledger.epsilon(1e-6)) <= 1e-6 * (1 + 1e-6)
    assert "No zCDP" in ledger.statement(1e-6)


def test_budget_is_checked_before_the_charge():
    ledger = PLDLedger(epsilon=1.0, delta=1e-5)
    big = SubsampledGaussianEntry(
        label="x", sensitivity=1.0, noise_std=0.6, sampling_probability=0.1, count=100
    )
    with pytest.raises(BudgetExceededError, match="nothing was charged"):
        ledger.charge(big)
    assert len(ledger) == 0 and ledger.epsilon(1e-5) == 0.0


def test_calibrated_noise_multiplier_meets_the_target_tightly():
    z = subsampled_gaussian_noise_multiplier(2.0, sampling_probability=0.02, count=300, delta=1e-5)
    eps = subsampled_gaussian_epsilon(z, sampling_probability=0.02, count=300, delta=1e-5)
    assert eps <= 2.0
    slightly_less = subsampled_gaussian_epsilon(
        z * (1 - 2e-3), sampling_probability=0.02, count=300, delta=1e-5
    )
    assert slightly_less > 2.0 * (1 - 1e-2)  # z is (nearly) the smallest that works


def test_amplified_entries_never_enter_the_zcdp_ledger():
    entry = SubsampledGaussianEntry(
        label="x", sensitivity=1.0, noise_std=1.0, sampling_probability=0.1
    )
    ledger = PrivacyLedger(relation="add-remove")
    with pytest.raises(TypeError, match="PLDLedger"):
        ledger.charge(entry)
    assert len(ledger) == 0
    assert not hasattr(entry, "rho")
    with pytest.raises(ValueError, match="add-remove"):
        SubsampledGaussianEntry(
            label="x",
            sensitivity=1.0,
            noise_std=1.0,
            sampling_probability=0.1,
            relation="replace-one",
        )


def test_joint_epsilon_beside_a_zcdp_ledger():
    pld = PLDLedger()
    pld.charge(
        SubsampledGaussianEntry(
            label="sgd", sensitivity=1.0, noise_std=1.2, sampling_probability=0.05, count=30
        )
    )
    zcdp = PrivacyLedger(relation="add-remove")
    g = GaussianEntry(label="mean", sensitivity=1.0, noise_std=4.0, relation="add-remove")
    zcdp.charge(g)
    # plain Gaussians join the PLD composition exactly
    sgd = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, dpa.GaussianDpEvent(1.2)), 30)
    exact = _direct([sgd, dpa.GaussianDpEvent(4.0)], 1e-5)
    assert joint_epsilon(1e-5, pld, zcdp) == pytest.approx(exact, abs=1e-6)
    assert joint_epsilon(1e-5, pld, zcdp) > pld.epsilon(1e-5)
    with pytest.raises(ValueError, match="relations"):
        joint_epsilon(1e-5, pld, PrivacyLedger())
    # a plain Gaussian can also be charged to the PLD ledger directly, with the same result
    both = PLDLedger()
    both.charge(pld.entries[0])
    both.charge(g)
    assert both.epsilon(1e-5) == pytest.approx(exact, abs=1e-6)


def test_plain_gaussian_is_exact_under_replace_one():
    # dpfit's sensitivity is the replace-one one: mu = sensitivity / noise_std, not twice it
    from dpfit.privacy import gaussian_epsilon

    ledger = PLDLedger(relation="replace-one")
    ledger.charge(GaussianEntry(label="mean", sensitivity=1.0, noise_std=2.0, count=4))
    assert ledger.epsilon(1e-5) == pytest.approx(gaussian_epsilon(1.0, 1e-5), abs=1e-3)


def test_joint_epsilon_with_a_filter_entry_uses_basic_composition():
    from dpfit.privacy import Budget, privacy_filter

    zcdp = PrivacyLedger(relation="add-remove", budget=Budget(rho=1.0))
    with privacy_filter(zcdp, label="adaptive", rho=0.5) as filt:
        filt.ledger.charge(
            GaussianEntry(label="g", sensitivity=1.0, noise_std=2.0, relation="add-remove")
        )
    pld = PLDLedger()
    pld.charge(
        SubsampledGaussianEntry(
            label="sgd", sensitivity=1.0, noise_std=1.2, sampling_probability=0.05, count=30
        )
    )
    # the filter's guarantee is its bound, never its (data-dependent) realised releases
    expected = pld.epsilon(5e-6) + zcdp.epsilon(5e-6)
    assert joint_epsilon(1e-5, pld, zcdp) == pytest.approx(expected)
