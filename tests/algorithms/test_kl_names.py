"""The KL algorithms spell their bool ``clipping``: ``clip`` is a norm everywhere else in dpfit,
so the old ``clip=`` is refused with a one-line hint (a bool and a float get different hints)."""

import numpy as np
import pytest

import dpfit
import dpfit.algorithms as alg
from dpfit.losses import SquaredLoss

LOSS = SquaredLoss(y_bound=1.0, radius=2.0)
_GEN = np.random.default_rng(0)
X = 2.0 * _GEN.standard_normal((3000, 2))  # some rows break the declared L0: clipping binds
Y = np.clip(X @ np.array([0.3, -0.2]) + 0.1 * _GEN.standard_normal(3000), -1.0, 1.0)
KL = {"gamma": 1.0, "kappa": 1.0, "loss_bound": 5.0}  # a nontrivial schedule at n = 3000, rho = 1
RUNS = {
    "noisy_gd": lambda **kw: alg.noisy_gd(LOSS, X, Y, rho=0.5, steps=3, rng=1, **kw),
    "kl_spider": lambda **kw: alg.kl_spider(LOSS, X, Y, rho=1.0, rng=1, **KL, **kw),
    "proximal_point": lambda **kw: alg.proximal_point(
        LOSS, X, Y, rho=0.5, rng=1, inner_cap=2, gamma=1.0, kappa=3.0, loss_bound=1.0, **kw
    ),
    "adaptive_gd": lambda **kw: alg.adaptive_gd(LOSS, X, Y, rho=0.5, rng=1, max_steps=20, **kw),
    "minimize": lambda **kw: dpfit.minimize(
        LOSS, (X, Y), rho=0.5, method="noisy-gd", steps=3, random_state=1, **kw
    ),
}


@pytest.mark.parametrize("name", sorted(RUNS))
@pytest.mark.parametrize("value", [True, False])
def test_the_old_bool_spelling_is_refused_with_the_new_name(name, value):
    with pytest.raises(TypeError, match=f"clip={value} is spelt clipping={value}"):
        RUNS[name](clip=value)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_clip_norm_is_refused_with_where_the_norm_comes_from(name):
    with pytest.raises(TypeError, match=r"no clip norm; .*loss\.lipschitz"):
        RUNS[name](clip=1.0)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_clipping_must_be_a_bool(name):
    with pytest.raises(TypeError, match="clipping must be a bool, got int"):
        RUNS[name](clipping=1)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_clipping_is_recorded_and_changes_no_release(name):
    # The bound is enforced either way, so the same seed gives bit-identical releases; only
    # the non-private clipped-fraction diagnostic is dropped.
    on, off = RUNS[name](clipping=True), RUNS[name](clipping=False)
    assert on.iterates.shape[0] > 0  # something was released
    assert on.diagnostics["max_fraction_clipped"] > 0 == off.diagnostics["max_fraction_clipped"]
    assert (on.config["clipping"], off.config["clipping"]) == (True, False)
    assert "clip" not in on.config
    np.testing.assert_array_equal(on.iterates, off.iterates)
    np.testing.assert_array_equal(on.estimate, off.estimate)
