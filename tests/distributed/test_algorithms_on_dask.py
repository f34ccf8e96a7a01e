"""The full-batch private algorithms on Dask agree with the in-memory path (issue 10).

Same seed, same data: the releases differ only in the order in which the per-block sums
are added, so iterates agree to 1e-10 relative (observed: about 1e-15; the algorithms are
contractive, so summation-order differences of order 1e-16 per step do not grow). Every
test runs on a two-worker LocalCluster, where the checked data are persisted (the default
``dpfit.persist="auto"``); DP-GD also runs lazily (every step reads the source again).
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed (optional extra: dpfit[dask])")

import dask  # noqa: E402

import dpfit  # noqa: E402
from dpfit.algorithms import dp_gd, dp_second_stage_gd, dp_two_stage_gd, kl_spider, noisy_gd  # noqa: E402
from dpfit.algorithms._loss_queries import prepare  # noqa: E402
from dpfit.algorithms.ambssgd import dp_ambssgd  # noqa: E402
from dpfit.distributed import reduce as reduce_module  # noqa: E402
from dpfit.losses import FunctionLoss  # noqa: E402

pytestmark = pytest.mark.usefixtures("client")

RTOL = 1e-10  # the acceptance criterion; summation order alone gives about 1e-15
N, P = 3000, 4
RNG = np.random.default_rng(20260110)
X = RNG.standard_normal((N, P))
Y = X @ np.array([1.0, -1.0, 0.5, 2.0]) + 3.0 * RNG.standard_normal(N)  # clip binds often
# Uneven row chunks for X and y, and two column blocks for X: both are realigned.
XD = da.from_array(X, chunks=(700, 2))
YD = da.from_array(Y, chunks=1000)


def assert_close(a, b):
    np.testing.assert_allclose(b, a, rtol=RTOL, atol=RTOL * np.max(np.abs(a)))


def assert_same_releases(a, b):
    """Same ledger: labels, sensitivities, noise stds and total rho (no extra release).

    Noise stds set from earlier releases (adaptive GD) inherit their summation-order error.
    """
    ra, rb = (_gaussians(t.ledger) for t in (a, b))  # inside privacy filters too
    assert [(e.label, e.sensitivity) for e in rb] == [(e.label, e.sensitivity) for e in ra]
    assert_close([e.noise_std for e in ra], [e.noise_std for e in rb])
    assert b.ledger.rho == pytest.approx(a.ledger.rho, rel=RTOL)
    assert b.rho_spent == pytest.approx(a.rho_spent, rel=RTOL)


def _gaussians(ledger):
    return [g for e in ledger for g in getattr(e, "entries", (e,))]


@pytest.mark.parametrize("persist", ["auto", False], ids=["persisted", "lazy"])
@pytest.mark.parametrize(
    "options",
    [{}, {"runs": 2}, {"relation": "add-remove", "n_public": 2900}],
    ids=["replace-one", "two-runs", "add-remove"],
)
def test_dp_gd_matches_in_memory(options, persist):
    mem = dp_gd(X, Y, rho=0.5, clip=2.0, steps=8, rng=3, **options)
    with dask.config.set({"dpfit.persist": persist}):
        lazy = dp_gd(XD, YD, rho=0.5, clip=2.0, steps=8, rng=3, **{"n_public": N, **options})
    assert_close(mem.iterates, lazy.iterates)
    assert_same_releases(mem, lazy)
    counts = mem.diagnostics["clipped_per_step"]
    np.testing.assert_array_equal(lazy.diagnostics["clipped_per_step"], counts)
    assert counts.sum() > 0.1 * N * counts.size  # clipping is exercised
    if "relation" not in options:  # (non-private) fraction: over len(X) in memory, n_public here
        assert lazy.diagnostics["fraction_clipped"] == mem.diagnostics["fraction_clipped"]


@pytest.mark.parametrize("persist", ["auto", False])
def test_one_reduction_per_step_and_only_sums_reach_the_driver(monkeypatch, persist):
    # What each step brings back to the driver: one vector per row block (the clipped sum,
    # p numbers, and the clipped count), added there by tree_sum.
    real_tree_sum, results = reduce_module.tree_sum, []

    def tree_sum(parts):
        results.append(np.shape(parts))
        return real_tree_sum(parts)

    monkeypatch.setattr(reduce_module, "tree_sum", tree_sum)
    steps = 6
    with dask.config.set({"dpfit.persist": persist}):
        dp_gd(XD, YD, rho=0.5, clip=2.0, steps=steps, rng=3, n_public=N)
    assert results == [(len(XD.chunks[0]), P + 1)] * steps  # one reduction per step


def test_two_stage_matches_in_memory():
    Z = RNG.standard_normal((N, 3))
    Xi = Z[:, :2] + RNG.standard_normal((N, 2))
    yi = Xi @ np.array([1.0, -1.0]) + RNG.standard_normal(N)
    lazy_data = [da.from_array(a, chunks=800) for a in (Xi, yi, Z)]
    kw = {
        "rho_theta": 1.0,
        "rho_beta": 1.0,
        "clip_theta": 2.0,
        "clip_beta": 1.0,
        "steps": 8,
        "step_size_theta": 0.5,
        "step_size_beta": 0.5,
        "rng": 4,
    }
    mem = dp_two_stage_gd(Xi, yi, Z, **kw)
    lazy = dp_two_stage_gd(*lazy_data, n_public=N, **kw)
    assert_close(mem.iterates, lazy.iterates)
    assert_close(mem.releases["theta"], lazy.releases["theta"])
    assert_same_releases(mem, lazy)
    for key in ("fraction_clipped_theta", "fraction_clipped_beta"):
        np.testing.assert_array_equal(lazy.diagnostics[key], mem.diagnostics[key])
    kw2 = {"rho": 1.0, "clip": 1.0, "steps": 5, "step_size": 0.5, "rng": 5}
    theta = np.full((3, 2), 0.3)
    mem = dp_second_stage_gd(Xi, yi, Z, first_stage=theta, **kw2)
    lazy = dp_second_stage_gd(*lazy_data, first_stage=theta, n_public=N, **kw2)
    assert_close(mem.iterates, lazy.iterates)
    assert_same_releases(mem, lazy)


LOSS = FunctionLoss(grads=lambda w, X, y: X * (X @ w - y)[:, None], lipschitz=3.0, smoothness=2.0)


def test_noisy_gd_matches_in_memory():
    mem = noisy_gd(LOSS, X, Y, rho=1.0, steps=8, rng=6)
    lazy = noisy_gd(LOSS, XD, YD, rho=1.0, steps=8, rng=6, n_public=N)
    assert_close(mem.iterates, lazy.iterates)
    assert_same_releases(mem, lazy)
    assert lazy.diagnostics == mem.diagnostics


def test_gradient_difference_query_matches_in_memory():
    # KL-Spider's difference query (per-example grad(new) - grad(old), clipped), the shared
    # step of the KL methods; the whole algorithm runs in the slow test below.
    new, old = np.array([0.5, -0.2, 0.1, 1.0]), np.zeros(P)
    values = []
    for data, n_public in (((X, Y), None), ((XD, YD), N)):
        run = prepare(
            LOSS, *data, rho=1.0, theta0=None, clipping=True, relation="replace-one",
            n_public=n_public, ledger=None, rng=9, prefix="test",
        )  # fmt: skip
        values.append(run.queries.noisy_difference(new, old, bound=0.5, noise_std=0.01))
    assert_close(*values)


def test_minimize_takes_dask_data():
    kw = {"rho": 1.0, "method": "adaptive-gd", "max_steps": 3, "random_state": 2}
    mem = dpfit.minimize(LOSS, (X, Y), **kw)
    lazy = dpfit.minimize(LOSS, (XD, YD), n_public=N, **kw)
    assert_close(mem.iterates, lazy.iterates)
    assert_same_releases(mem, lazy)


@pytest.mark.slow
def test_kl_spider_matches_in_memory():
    kw = {"rho": 1.0, "gamma": 1.0, "kappa": 1.0, "loss_bound": 5.0, "rng": 7}
    mem = kl_spider(LOSS, X, Y, **kw)  # 27 anchors and 13 gradient differences
    lazy = kl_spider(LOSS, XD, YD, n_public=N, **kw)
    (entry,) = mem.ledger  # the privacy filter of the run
    assert set(entry.counts) == {"kl_spider/anchor", "kl_spider/difference"}
    assert_close(mem.iterates, lazy.iterates)
    assert_same_releases(mem, lazy)


def test_unsupervised_loss_on_dask():
    mean_loss = FunctionLoss(grads=lambda w, X, y: w - X, lipschitz=4.0, supervised=False)
    mem = noisy_gd(mean_loss, X, rho=1.0, steps=5, step_size=0.5, rng=8)
    lazy = noisy_gd(mean_loss, XD, rho=1.0, steps=5, step_size=0.5, rng=8, n_public=N)
    assert_close(mem.iterates, lazy.iterates)


def test_dp_ambssgd_one_pass_matches_in_memory():
    n = 40_000
    Xa = RNG.standard_normal((n, 4))
    ya = Xa @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.1 * RNG.standard_normal(n)
    kw = {
        "rho": 0.5,
        "feature_scale": np.sqrt(6),
        "residual_bound": 40.0,
        "accounting": "parallel",
        "steps": 6,
        "rng": 1,
        "diagnostics": True,
    }
    with pytest.warns(Warning):  # SideConditionWarning on this small n, as in memory
        mem = dp_ambssgd(Xa, ya, **kw)
    with pytest.warns(Warning):
        lazy = dp_ambssgd(
            da.from_array(Xa, chunks=(6000, 4)), da.from_array(ya, chunks=6000), n_public=n, **kw
        )
    assert lazy.config["data_kind"] == "dask"
    np.testing.assert_array_equal(lazy.releases["stat_counts"], mem.releases["stat_counts"])
    assert_close(mem.iterates, lazy.iterates)
    np.testing.assert_array_equal(
        lazy.diagnostics["fraction_clipped"], mem.diagnostics["fraction_clipped"]
    )
    assert_close(mem.diagnostics["max_stat_residual"], lazy.diagnostics["max_stat_residual"])
