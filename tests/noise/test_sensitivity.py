"""Multi-participation sensitivity (spec §2.4, test 4; reliability §4.6): fast vs brute force."""

import numpy as np
import pytest

from dpfit.noise import (
    anti_pgd,
    banded,
    brute_force_sensitivity_squared,
    dpsgd,
    fichtenberger,
    minsep_sensitivity_squared_bound,
    monotone_toeplitz_sensitivity_squared,
    nu_dpftrl,
    optimal_mean_estimation,
    restarted,
    toeplitz,
    tree_aggregation,
)

# Reference values: spec §2.4 table and Verification item 3 (numpy recomputation).
GOLDEN = [
    (600, 20, 30, 0.0, 287.7434),
    (600, 20, 30, 0.01, 81.2562),
    (600, 20, 30, 0.02, 54.1996),
    (600, 20, 30, 0.1, 29.4154),
    (600, 20, 30, 1.0, 20.0),
    (2000, 20, 100, 0.0, 295.5159),
    (2000, 20, 100, 0.01, 49.617),
    (2000, 20, 100, 0.02, 39.958),
    (2000, 20, 100, 0.1, 29.037),
    (2000, 20, 100, 0.004, 75.827),
    (2052, 6, 342, 0.0, 37.2030),
    (2052, 6, 342, 0.01, 12.890),
    (2052, 6, 342, 0.02, 11.541),
    (2052, 6, 342, 0.1, 8.711),
    (2052, 6, 342, 1.0, 6.0),
]


@pytest.mark.parametrize(("T", "k", "b", "nu", "ref"), GOLDEN)
def test_multi_epoch_reference_values(T, k, b, nu, ref):
    got = nu_dpftrl(nu, steps=T).sensitivity_squared(participations=k, separation=b)
    assert got == pytest.approx(ref, abs=6e-4)


def test_single_participation_values():
    assert fichtenberger(2000).sensitivity_squared() == pytest.approx(3.485678, abs=1e-6)
    assert nu_dpftrl(0.004, steps=2000).sensitivity_squared() == pytest.approx(2.4237, abs=1e-4)
    assert dpsgd(100).sensitivity_squared(participations=7, separation=10) == 7.0


@pytest.mark.parametrize("nu", [0.0, 0.01, 0.1, 1.0])
def test_fast_formula_equals_brute_force_over_offsets(nu):
    mech = nu_dpftrl(nu, steps=600)
    brute = brute_force_sensitivity_squared(mech.encoder_matrix(), 20, 30)
    assert mech.sensitivity_squared(20, 30) == pytest.approx(brute, rel=1e-12)
    # the general |C^T C| route of the base class agrees too
    general = type(mech).__mro__[1]._sensitivity_squared(mech, 20, 30, "fixed-epoch")
    assert general == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize(
    "mech",
    [
        nu_dpftrl(0.05, steps=14),
        fichtenberger(14),
        banded(nu_dpftrl(0.0, steps=14), 2),
        optimal_mean_estimation(1.6, steps=14),
        anti_pgd(14, damping=0.3),
        toeplitz(np.array([1.0, 0.7, -0.4, 0.2] + [0.0] * 10)),
        tree_aggregation(14),
        restarted(fichtenberger(7), 2),
    ],
    ids=lambda m: m.name,
)
@pytest.mark.parametrize(("k", "b"), [(1, 14), (2, 7), (3, 5), (4, 3), (14, 1)])
def test_every_mechanism_against_brute_force_small_T(mech, k, b):
    C = mech.encoder_matrix()
    # fixed epoch order with every epoch: the general bound is the exact max over offsets
    if k == -(-14 // b):
        exact = brute_force_sensitivity_squared(C, k, b, "fixed-epoch")
        assert mech.sensitivity_squared(k, b, "fixed-epoch") == pytest.approx(exact, rel=1e-12)
    # min-separation: a valid upper bound, exact when c is monotone (2405.13763, Thm. 2)
    brute = brute_force_sensitivity_squared(C, k, b, "min-separation")
    got = mech.sensitivity_squared(k, b, "min-separation")
    assert got >= brute * (1 - 1e-12)
    if getattr(mech, "monotone", False) or k == 1:
        assert got == pytest.approx(brute, rel=1e-12)


def test_fewer_participations_than_epochs_is_covered():
    mech = toeplitz(np.array([1.0, -0.9, 0.5] + [0.0] * 9))
    C = mech.encoder_matrix()
    brute = brute_force_sensitivity_squared(C, 2, 3, "min-separation")
    assert mech.sensitivity_squared(2, 3, "fixed-epoch") >= brute * (1 - 1e-12)


def test_monotone_formula_refuses_non_monotone_inverse():
    with pytest.raises(ValueError, match="non-increasing"):
        monotone_toeplitz_sensitivity_squared(np.array([1.0, 1.2]), 1, 1)
    with pytest.raises(ValueError, match="non-negative"):
        monotone_toeplitz_sensitivity_squared(np.array([1.0, -0.2]), 1, 1)


def test_minsep_bound_single_participation_is_the_max_diagonal():
    X = np.diag([1.0, 3.0, 2.0])
    assert minsep_sensitivity_squared_bound(X, 1, 1) == 3.0


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(participations=2), TypeError, "separation is required"),
        (dict(participations=0, separation=2), ValueError, "participations"),
        (dict(participations=2, separation=0), ValueError, "separation"),
        (dict(participations=2, separation=2, order="shuffle"), ValueError, "order"),
        (dict(participations=True, separation=2), TypeError, "participations"),
    ],
)
def test_bad_participation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        nu_dpftrl(0.1, steps=10).sensitivity_squared(**kwargs)
