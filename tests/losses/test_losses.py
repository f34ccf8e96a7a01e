"""Per-example losses: gradients against finite differences, declared constants, protocol."""

import numpy as np
import pytest

from dpfit.losses import (
    FunctionLoss,
    HuberLoss,
    KarimiPLLoss,
    LogisticLoss,
    LpLoss,
    SineLinkLoss,
    SquaredDistanceLoss,
    SquaredLoss,
    WelschLoss,
    per_example_gradients,
    split_data,
)

D = 4
RNG = np.random.default_rng(2024)


def _unit_rows(n, d, scale=1.0):
    X = RNG.standard_normal((n, d))
    return scale * X / np.linalg.norm(X, axis=1, keepdims=True) * RNG.uniform(size=(n, 1))


# Each case: loss, data with ||x|| <= 1 and |y| <= y_bound, the region radius it declares.
CASES = {
    "squared": (SquaredLoss(y_bound=1.0, radius=2.0), 2.0, 1.0),
    "squared-ridge": (SquaredLoss(y_bound=1.0, radius=2.0, l2=0.3), 2.0, 1.0),
    "logistic": (LogisticLoss(l2=0.1, radius=2.0), 2.0, 1.0),
    "huber": (HuberLoss(delta=0.5, l2=0.1, radius=2.0), 2.0, 1.0),
    "lp4": (LpLoss(4, y_bound=0.5, radius=1.0), 1.0, 0.5),
    "lp1.5": (LpLoss(1.5, y_bound=0.5, radius=1.0), 1.0, 0.5),
    "sine-link": (SineLinkLoss(y_bound=1.5, radius=1.0), 1.0, 1.5),
    "welsch": (WelschLoss(scale=0.7), 3.0, 1.0),
}


def _data(name, n=200):
    X = _unit_rows(n, D)
    y = RNG.uniform(-1, 1, n) * CASES[name][2]
    if name == "logistic":
        y = np.sign(y)
    return X, y


def _theta(radius):
    t = RNG.standard_normal(D)
    return t / np.linalg.norm(t) * radius * RNG.uniform(0.2, 1.0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_central_differences(name):
    loss, radius, _ = CASES[name]
    X, y = _data(name, n=5)
    theta = _theta(radius)
    G = per_example_gradients(loss, theta, X, y)
    h = 1e-6
    for j in range(D):
        e = np.zeros(D)
        e[j] = h
        fd = loss.per_example_values(theta + e, X, y) - loss.per_example_values(theta - e, X, y)
        # central differences: truncation O(h^2 f''') and rounding O(eps/h) ~ 1e-10, so 1e-6
        np.testing.assert_allclose(G[:, j], fd / (2 * h), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_declared_lipschitz_and_smoothness_hold_on_the_region(name):
    loss, radius, _ = CASES[name]
    X, y = _data(name)
    for _ in range(30):
        a, b = _theta(radius), _theta(radius)
        Ga, Gb = per_example_gradients(loss, a, X, y), per_example_gradients(loss, b, X, y)
        assert np.linalg.norm(Ga, axis=1).max() <= loss.lipschitz * (1 + 1e-12)
        if loss.smoothness is not None:
            ratio = np.linalg.norm(Ga - Gb, axis=1).max() / np.linalg.norm(a - b)
            assert ratio <= loss.smoothness * (1 + 1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_weak_convexity_holds(name):
    """f + (L1w/2)||.||^2 convex: the midpoint inequality on random pairs in the region."""
    loss, radius, _ = CASES[name]
    X, y = _data(name)
    for _ in range(30):
        a, b = _theta(radius), _theta(radius)
        fa, fb = loss.per_example_values(a, X, y), loss.per_example_values(b, X, y)
        fm = loss.per_example_values((a + b) / 2, X, y)
        slack = loss.weak_convexity / 8 * np.sum((a - b) ** 2)
        assert np.all(fm <= (fa + fb) / 2 + slack + 1e-12)


def test_karimi_pl_loss_constants_and_gradient():
    loss = KarimiPLLoss(dim=10)
    # Spec §6.2 B1 / verification 10: max |h'| on |z| <= 3.3 is 7.5346, so L0 = 7.53 sqrt(10).
    assert loss.lipschitz == pytest.approx(7.5346 * np.sqrt(10), rel=1e-4)
    assert (loss.smoothness, loss.weak_convexity) == (8.0, 4.0)
    X = RNG.uniform(-1.3, 1.3, (50, 10))
    theta = RNG.uniform(-2, 2, 10)
    G = per_example_gradients(loss, theta, X, None)
    assert np.linalg.norm(G, axis=1).max() <= loss.lipschitz
    h, e = 1e-6, np.eye(10)[3] * 1e-6
    fd = (loss.per_example_values(theta + e, X) - loss.per_example_values(theta - e, X)) / (2 * h)
    np.testing.assert_allclose(G[:, 3], fd, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="dim = 10"):
        loss.n_params(9)


def test_squared_distance_is_minimised_by_the_mean():
    loss = SquaredDistanceLoss()
    X = _unit_rows(100, 3)
    np.testing.assert_allclose(loss.grad(X.mean(axis=0), X), 0.0, atol=1e-15)
    assert loss.lipschitz == 3.0  # spec B0: R = 2, ||x|| <= 1


def test_wrong_shape_gradient_raises_value_error():
    bad = FunctionLoss(grads=lambda w, X, y: X.T, lipschitz=1.0)
    X, y = _unit_rows(5, 3), np.zeros(5)
    with pytest.raises(ValueError, match=r"returned shape \(3, 5\), expected \(n, p\) = \(5, 3\)"):
        per_example_gradients(bad, np.zeros(3), X, y)


def test_non_finite_rows_become_exactly_zero_with_and_without_clip():
    def grads(w, X, y):
        G = X.copy()
        G[1] = np.nan
        G[2, 0] = np.inf
        G[3] = 1.5e308  # finite entries whose norm overflows float64
        return G

    loss = FunctionLoss(grads=grads, lipschitz=1.0)
    X = np.ones((5, 2))
    for clip in (None, 0.5):
        G = per_example_gradients(loss, np.zeros(2), X, np.zeros(5), clip=clip)
        assert np.isfinite(G).all()
        assert (G[1:4] == 0).all()
        assert np.linalg.norm(G[0]) > 0


def test_split_data_and_constant_validation():
    X, y = _unit_rows(4, 2), np.zeros(4)
    Xs, ys = split_data(SquaredLoss(), (X, y))
    assert Xs.dtype == np.float64 and np.array_equal(ys, y)
    with pytest.raises(ValueError, match="y is missing"):
        split_data(SquaredLoss(), X)
    with pytest.raises(ValueError, match="uses no y"):
        split_data(SquaredDistanceLoss(), (X, y))
    with pytest.raises(ValueError, match="NaN"):
        split_data(SquaredDistanceLoss(), np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match="lipschitz"):
        FunctionLoss(grads=lambda *a: None, lipschitz=-1.0)
    with pytest.raises(TypeError, match="lipschitz"):
        FunctionLoss(grads=lambda *a: None, lipschitz=True)
    with pytest.raises(ValueError, match="x_bound"):
        SquaredLoss(x_bound=0.0)
    with pytest.raises(ValueError, match="p must be"):
        LpLoss(1.0)
    with pytest.raises(TypeError, match="unknown loss constants"):
        SquaredLoss().with_constants(lipshitz=2.0)
    tight = SquaredLoss().with_constants(lipschitz=0.5)
    assert tight.lipschitz == 0.5 and SquaredLoss().lipschitz == 2.0
