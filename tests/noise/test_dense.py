"""The multi-epoch optimal dense factorisation (ME): structure, sensitivity, optimality, stream."""

import numpy as np
import pytest

from dpfit.mechanisms import make_noise_source
from dpfit.noise import (
    DenseMechanism,
    brute_force_sensitivity_squared,
    calibrate,
    correlated_noise,
    dpsgd,
    fichtenberger,
    multi_epoch,
    nu_dpftrl,
    restarted,
    select_nu,
    tree_aggregation,
)
from dpfit.noise.dense import GAP_TOL, _dual_bound, _objective, _prefix_gram
from dpfit.privacy import PrivacyLedger


def _objective_of(mech, k, b):
    return mech.sensitivity_squared(k, b) * mech.prefix_error()


@pytest.mark.parametrize(("T", "b"), [(12, 3), (12, 4), (13, 5), (40, 10)])
def test_factorisation_has_the_multi_epoch_structure(T, b):
    mech = multi_epoch(T, separation=b)
    C, B = mech.encoder_matrix(), mech.decoder_matrix()
    assert not np.triu(C, 1).any()  # lower triangular: adaptively chosen gradients are covered
    np.testing.assert_allclose(B @ C, np.eye(T), atol=1e-12)
    X = C.T @ C
    np.testing.assert_allclose(mech.gram(np.arange(T)[None])[0], X, atol=1e-14)
    np.testing.assert_allclose(np.diag(X), 1.0, atol=1e-12)
    i = np.arange(T)
    same = ((i[:, None] - i[None, :]) % b == 0) & (i[:, None] != i[None, :])
    assert np.abs(X[same]).max() < 1e-12
    assert mech.optimality_gap <= GAP_TOL


@pytest.mark.parametrize(("T", "k", "b"), [(12, 4, 3), (12, 3, 4), (13, 3, 5), (16, 2, 8)])
def test_sensitivity_matches_brute_force(T, k, b):
    mech = multi_epoch(T, separation=b)
    C = mech.encoder_matrix()
    fixed = brute_force_sensitivity_squared(C, k, b, "fixed-epoch")
    assert fixed == pytest.approx(k, abs=1e-10)  # the constraints make sens^2 = k
    assert mech.sensitivity_squared(k, b) == pytest.approx(fixed, rel=1e-12)
    # min-separation allows gaps that are not multiples of b: the generic bound must cover them
    minsep = brute_force_sensitivity_squared(C, k, b, "min-separation")
    assert mech.sensitivity_squared(k, b, "min-separation") >= minsep - 1e-12
    assert minsep >= fixed - 1e-12
    assert mech.sensitivity_squared() == pytest.approx(1.0, abs=1e-12)  # unit columns


def test_calibrated_noise_equals_dp_sgd_at_the_same_participation():
    """sens^2 = k for both, so ME needs exactly DP-SGD's noise (and so errs less: its prefix
    error is the smaller)."""
    kw = dict(clip=1.0, batch_size=10, epsilon=2.0, delta=1e-5, participations=4, separation=10)
    me, sgd = multi_epoch(40, separation=10), dpsgd(40)
    assert calibrate(me, **kw).noise_std == pytest.approx(calibrate(sgd, **kw).noise_std, 1e-12)
    assert me.prefix_error() < sgd.prefix_error()


def test_dual_bound_is_a_certificate():
    """The bound at the returned X is below the objective of every other feasible X tried."""
    T, b = 30, 6
    W = _prefix_gram(T)
    mech = multi_epoch(T, separation=b)
    X = mech.encoder_matrix().T @ mech.encoder_matrix()
    f, H = _objective(X, W)
    i = np.arange(T)
    free = (i[:, None] - i[None, :]) % b != 0
    bound = _dual_bound(H, free)
    assert bound <= f <= bound * (1 + GAP_TOL)
    rng = np.random.default_rng(0)
    for _ in range(20):  # feasible perturbations: symmetric, on free entries, still > 0
        E = rng.normal(size=(T, T)) * free * 0.02
        f_other, _ = _objective(X + E + E.T, W)
        assert f_other >= bound


@pytest.mark.parametrize(("T", "k", "b"), [(100, 5, 20), (200, 4, 50)])
def test_me_error_is_below_nu_dpftrl_and_restarted_mechanisms(T, k, b):
    """ME is within GAP_TOL of the optimum over factorisations whose X has unit diagonal and
    zero cross-epoch entries. Any mechanism restarted every epoch rescales into that set
    without raising sens^2 x error (X / max diag + the missing diagonal), so ME must not lose
    to it by more than GAP_TOL. nu-DP-FTRL's X has positive cross-epoch entries and is not in
    the set; ME beats it empirically by > 20 % (0.79 and 0.77 here), asserted with no slack."""
    me = _objective_of(multi_epoch(T, separation=b), k, b)
    nu = nu_dpftrl(select_nu(T, participations=k, separation=b).nu, steps=T)
    assert me <= _objective_of(nu, k, b)
    for block in (tree_aggregation(b), fichtenberger(b), nu_dpftrl(0.05, steps=b)):
        assert me <= _objective_of(restarted(block, k), k, b) * (1 + GAP_TOL)


def test_single_participation_is_the_identity_free_optimum():
    mech = multi_epoch(50)
    assert mech.sensitivity_squared() == pytest.approx(1.0, abs=1e-12)
    assert mech.prefix_error() <= fichtenberger(50).sensitivity_squared() * fichtenberger(
        50
    ).prefix_error() * (1 + GAP_TOL)


def test_stream_adds_the_decoder_times_the_rows():
    mech = multi_epoch(24, separation=6)
    dim = 5
    for mode in ("regenerate", "buffered"):
        stream = correlated_noise(
            mech,
            dim=dim,
            clip=1.0,
            batch_size=1,
            noise_std=0.7,
            ledger=PrivacyLedger(),
            rng=make_noise_source(11),
            mode=mode,
        )
        got = np.array([stream.privatize(np.zeros(dim)) for _ in range(mech.steps)])
        child = make_noise_source(11).spawn(1)[0]
        Z = np.array([child.keyed_generator(i).standard_normal(dim) for i in range(24)])
        np.testing.assert_allclose(got, 0.7 * mech.decoder_matrix() @ Z, rtol=0, atol=1e-12)


def test_invalid_encoders_are_refused():
    with pytest.raises(ValueError, match="lower triangular"):
        DenseMechanism(encoder=np.ones((3, 3)))
    with pytest.raises(ValueError, match="lower triangular"):
        DenseMechanism(encoder=np.tril(np.ones((3, 3))) - np.eye(3))
    with pytest.raises(ValueError, match="square"):
        DenseMechanism(encoder=np.ones((2, 3)))
